"""source_chat_ids in each of upstream's shapes -> one list of text ids."""

from __future__ import annotations

from reme_beam.evidence import normalise_evidence, normalise_id


def test_flat_and_nested_lists_flatten_in_order_without_repeats() -> None:
    assert normalise_evidence([28]).ids == ("28",)
    evidence = normalise_evidence([116, 118, [136, 138], 118])
    assert evidence.ids == ("116", "118", "136", "138")
    assert evidence.groups == {}


def test_named_groups_keep_their_ids_and_the_union() -> None:
    evidence = normalise_evidence({"original_info": [86], "updated_info": [114, [115]]})
    assert evidence.ids == ("86", "114", "115")
    assert evidence.groups == {"original_info": ("86",), "updated_info": ("114", "115")}


def test_markers_strings_and_numbers_name_the_same_message() -> None:
    assert normalise_evidence(["62 ->-> 2,7", 62, "062", 62.0]).ids == ("62",)
    assert normalise_id("  ->-> 1,1") is None
    assert normalise_id("msg-7") == "msg-7"
    assert normalise_id(True) is None


def test_abstention_has_no_evidence() -> None:
    assert not normalise_evidence(None)
    assert normalise_evidence(None).ids == ()
    assert normalise_evidence([]).ids == ()
