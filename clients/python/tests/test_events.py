"""Events decoded from the daemon's signals are values: equal by value and hashable."""

from __future__ import annotations

import json
import pickle

import pytest
from dbus_fast import Variant

import tocsin
from tocsin._events import from_signal


def test_decoded_events_hash_equal_when_equal_and_go_in_a_set() -> None:
    a = from_signal("ActionInvoked", ["standup", "join", {"url": "https://meet.example"}])
    b = from_signal("ActionInvoked", ["standup", "join", {"url": "https://meet.example"}])
    other = from_signal("ActionInvoked", ["standup", "join", {"url": "https://elsewhere.example"}])
    assert a == b == tocsin.ActionInvoked("standup", "join", {"url": "https://meet.example"})
    assert hash(a) == hash(b) and a != other
    assert {a, b, other} == {a, other} and len({a, b, other}) == 2
    info = {"title": Variant("s", "Tea"), "occurrence": Variant("x", 1), "user_info": Variant("a{ss}", {"cup": "2"})}
    fired = from_signal("Fired", ["tea", info])
    assert fired == from_signal("Fired", ["tea", info]) and hash(fired) == hash(from_signal("Fired", ["tea", info]))
    assert {fired: "seen"}[from_signal("Fired", ["tea", info])] == "seen"


def test_user_info_is_a_read_only_dict_equal_to_its_items() -> None:
    event = tocsin.ActionInvoked("k", "default", {"a": "1"})
    info = event.user_info
    assert info == {"a": "1"} and {"a": "1"} == info and info != {"a": "2"}
    assert dict(info) == {"a": "1"} and list(info.items()) == [("a", "1")] and "a" in info
    assert repr(event) == "ActionInvoked(key='k', action='default', user_info={'a': '1'})"
    # Still a dict: apps serialise it as before.
    assert isinstance(info, dict) and json.dumps(info) == '{"a": "1"}'
    for change in (lambda: info.__setitem__("a", "2"), lambda: info.pop("a"), lambda: info.update(b="3"),
                   lambda: info.clear(), lambda: info.setdefault("c", "4"), lambda: info.popitem(),
                   lambda: info.__delitem__("a")):
        with pytest.raises(TypeError):
            change()
    assert info == {"a": "1"}
    assert pickle.loads(pickle.dumps(event)) == event
    assert tocsin.Fired("k", "", "", None, None, 1, False, "", "normal") == \
        tocsin.Fired("k", "", "", None, None, 1, False, "", "normal", user_info={})
