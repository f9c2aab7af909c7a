// The note editor: CodeMirror 5 over the form's textarea (the textarea itself works without
// it). Tab leaves the editor, so keyboard users are never trapped in it.
(function () {
  "use strict";
  document.addEventListener("DOMContentLoaded", function () {
    if (typeof window.CodeMirror === "undefined") { return; }
    document.querySelectorAll("textarea[data-editor]").forEach(function (area) {
      var label = document.querySelector('label[for="' + area.id + '"]');
      var editor = window.CodeMirror.fromTextArea(area, {
        mode: "markdown",
        lineNumbers: true,
        lineWrapping: true,
        inputStyle: "contenteditable",
        screenReaderLabel: label ? label.textContent : "Note text",
        extraKeys: { Tab: false, "Shift-Tab": false },
        viewportMargin: 50
      });
      editor.getWrapperElement().classList.add("editor");
      area.form.addEventListener("submit", function () { editor.save(); });
    });
  });
})();
