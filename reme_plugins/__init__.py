"""The shipped default backends, registered through the ``reme`` entry-point group."""
