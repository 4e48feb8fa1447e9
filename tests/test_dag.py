"""``Dag``: readiness (hard deps block, soft deps do not, parents wait for children), structure queries,
the critical path, and the ``dag.json`` round trip."""

from __future__ import annotations

import json

import pytest

from engine.runs.dag import Dag, Node, NodeStatus


def _ids(nodes: list[Node]) -> set[str]:
    return {n.id for n in nodes}


def _tree() -> Dag:
    """root ── a, b, c ; b hard-depends on a ; c soft-depends on a."""
    dag = Dag()
    dag.add(Node("root", "the goal", "goal", 0))
    dag.add(Node("a", "gather", "gather", 1, parent="root"))
    dag.add(Node("b", "analyse", "analyse", 1, parent="root", hard_deps=["a"]))
    dag.add(Node("c", "context", "context", 1, parent="root", soft_deps=["a"]))
    return dag


# --- node lifecycle ----------------------------------------------------------------------------------------


def test_finished_and_ok_statuses() -> None:
    finished = {s for s in NodeStatus if s.finished}
    ok = {s for s in NodeStatus if s.ok}
    assert finished == {
        NodeStatus.SUCCEEDED,
        NodeStatus.CACHE_HIT,
        NodeStatus.FAILED,
        NodeStatus.PRUNED,
        NodeStatus.FAILED_WITH_DIAGNOSTIC,  # its retries ran out: finished, not ok
    }
    assert ok == {NodeStatus.SUCCEEDED, NodeStatus.CACHE_HIT}
    assert not NodeStatus.CREATED.finished and not NodeStatus.STARTED.finished


def test_duration_is_zero_until_the_node_has_both_ends() -> None:
    node = Node("n", "t", "s", 0)
    assert node.duration_ms == 0.0
    node.started_at = 10.0
    assert node.duration_ms == 0.0
    node.finished_at = 10.25
    assert node.duration_ms == 250.0


# --- ready() -----------------------------------------------------------------------------------------------


def test_hard_deps_block_until_finished_and_soft_deps_never_block() -> None:
    dag = _tree()
    assert _ids(dag.ready()) == {"a", "c"}  # b waits for a; c only soft-depends on a; root waits
    dag.node("a").status = NodeStatus.STARTED
    assert _ids(dag.ready()) == {"c"}  # started is not finished, and a is no longer CREATED
    dag.node("a").status = NodeStatus.SUCCEEDED
    assert _ids(dag.ready()) == {"b", "c"}


@pytest.mark.parametrize("status", [NodeStatus.CACHE_HIT, NodeStatus.FAILED, NodeStatus.PRUNED])
def test_any_finished_hard_dep_unblocks(status: NodeStatus) -> None:
    dag = _tree()
    dag.node("a").status = status
    assert "b" in _ids(dag.ready())


def test_a_parent_waits_for_all_its_children() -> None:
    dag = _tree()
    assert "root" not in _ids(dag.ready())
    for child in ("a", "b"):
        dag.node(child).status = NodeStatus.SUCCEEDED
        assert "root" not in _ids(dag.ready())
    dag.node("c").status = NodeStatus.FAILED
    assert _ids(dag.ready()) == {"root"}


def test_a_parent_waits_for_grandchildren_through_its_children() -> None:
    dag = Dag()
    dag.add(Node("root", "g", "goal", 0))
    dag.add(Node("mid", "m", "s", 1, parent="root"))
    dag.add(Node("leaf", "l", "s", 2, parent="mid"))
    assert _ids(dag.ready()) == {"leaf"}
    dag.node("leaf").status = NodeStatus.SUCCEEDED
    assert _ids(dag.ready()) == {"mid"}
    dag.node("mid").status = NodeStatus.SUCCEEDED
    assert _ids(dag.ready()) == {"root"}


def test_only_created_nodes_are_ready() -> None:
    dag = Dag()
    for i, status in enumerate(NodeStatus):
        node = dag.add(Node(f"n{i}", "t", "s", 0))
        node.status = status
    assert [n.status for n in dag.ready()] == [NodeStatus.CREATED]


def test_a_single_node_dag_is_ready_at_once() -> None:
    dag = Dag()
    dag.add(Node("root", "g", "goal", 0))
    assert _ids(dag.ready()) == {"root"}
    dag.node("root").status = NodeStatus.SUCCEEDED
    assert dag.ready() == []


def test_a_hard_dep_on_a_node_that_was_never_added_does_not_break_the_dag() -> None:
    dag = Dag()
    dag.add(Node("root", "g", "goal", 0))
    dag.add(Node("x", "t", "s", 1, parent="root", hard_deps=["ghost"], soft_deps=["phantom"]))
    assert len(dag) == 2
    assert _ids(list(dag)) == {"root", "x"}
    assert "ghost" not in dag
    assert _ids(dag.ready()) == {"x"}
    assert dag.root().id == "root"
    assert dag.critical_path_length() == 2  # x -> root; the ghost is not a step
    assert Dag.from_json(dag.to_json()).node("x").hard_deps == ["ghost"]


def test_nodes_may_be_added_before_their_parent_and_dependencies() -> None:
    dag = Dag()
    dag.add(Node("b", "t", "s", 1, parent="root", hard_deps=["a"]))
    dag.add(Node("a", "t", "s", 1, parent="root"))
    dag.add(Node("root", "g", "goal", 0))
    assert len(dag) == 3
    assert dag.root().id == "root"
    assert _ids(dag.children("root")) == {"a", "b"}
    assert _ids(dag.ready()) == {"a"}


# --- structure ---------------------------------------------------------------------------------------------


def test_root_is_the_node_without_a_parent() -> None:
    dag = Dag()
    dag.add(Node("child", "t", "s", 1, parent="top"))
    dag.add(Node("top", "g", "goal", 0))
    assert dag.root().id == "top"


def test_children_are_only_child_edges_not_dependents() -> None:
    dag = _tree()
    assert _ids(dag.children("root")) == {"a", "b", "c"}
    assert dag.children("a") == []  # b and c depend on a but are not its children
    assert all(isinstance(c, Node) for c in dag.children("root"))


def test_children_asked_for_before_a_node_is_added_include_it_after() -> None:
    dag = _tree()
    assert [n.id for n in dag.children("root")] == ["a", "b", "c"]  # plan order
    dag.add(Node("d", "more", "gather", 1, parent="root"))  # a split adds subtasks mid-run
    assert [n.id for n in dag.children("root")] == ["a", "b", "c", "d"]
    replaced = dag.add(Node("a", "gather again", "gather", 1, parent="root"))  # the same id, a new node
    assert dag.children("root")[0] is replaced
    dag.node("d").cut, dag.node("d").status = "max_nodes", NodeStatus.PRUNED  # a limit left it out
    assert _ids(dag.children("root")) == {"a", "b", "c"} and _ids(dag.children("root", cut=True)) >= {"d"}
    dag.add(Node("a2", "t", "s", 2, parent="a"))
    assert _ids(dag.children("a")) == {"a2"} and _ids(dag.ready()) == {"a2", "c"}


def test_len_contains_node_and_iteration() -> None:
    dag = _tree()
    assert len(dag) == 4
    assert "b" in dag and "zzz" not in dag
    assert dag.node("b").hard_deps == ["a"]
    assert [n.id for n in dag] == ["root", "a", "b", "c"]  # insertion order


def test_add_returns_the_node_and_edges_carry_their_kind() -> None:
    dag = Dag()
    root = dag.add(Node("root", "g", "goal", 0))
    assert root is dag.node("root")
    dag.add(Node("a", "t", "s", 1, parent="root"))
    dag.add(Node("b", "t", "s", 1, parent="root", hard_deps=["a"]))
    dag.add(Node("c", "t", "s", 1, parent="root", soft_deps=["b"]))
    kinds = {(u, v): d["kind"] for u, v, d in dag.graph.edges(data=True)}
    assert kinds == {
        ("root", "a"): "child",
        ("root", "b"): "child",
        ("root", "c"): "child",
        ("a", "b"): "hard",
        ("b", "c"): "soft",
    }


# --- critical path -----------------------------------------------------------------------------------------


def test_critical_path_of_empty_and_single_node_dags() -> None:
    assert Dag().critical_path_length() == 0
    dag = Dag()
    dag.add(Node("root", "g", "goal", 0))
    assert dag.critical_path_length() == 1


def test_parallel_children_make_a_path_of_two() -> None:
    dag = Dag()
    dag.add(Node("root", "g", "goal", 0))
    for i in range(5):
        dag.add(Node(f"c{i}", "t", "s", 1, parent="root"))
    assert dag.critical_path_length() == 2  # any child, then the root's synthesis


def test_hard_dependency_chains_lengthen_the_critical_path() -> None:
    dag = _tree()
    assert dag.critical_path_length() == 3  # a -> b -> root
    dag.add(Node("d", "t", "s", 1, parent="root", hard_deps=["b"]))
    assert dag.critical_path_length() == 4  # a -> b -> d -> root


def test_soft_dependencies_do_not_lengthen_the_critical_path() -> None:
    dag = Dag()
    dag.add(Node("root", "g", "goal", 0))
    dag.add(Node("a", "t", "s", 1, parent="root"))
    dag.add(Node("b", "t", "s", 1, parent="root", soft_deps=["a"]))
    assert dag.critical_path_length() == 2


def test_nested_children_count_every_level() -> None:
    dag = Dag()
    dag.add(Node("root", "g", "goal", 0))
    dag.add(Node("mid", "m", "s", 1, parent="root"))
    dag.add(Node("leaf1", "l", "s", 2, parent="mid"))
    dag.add(Node("leaf2", "l", "s", 2, parent="mid", hard_deps=["leaf1"]))
    assert dag.critical_path_length() == 4  # leaf1 -> leaf2 -> mid -> root


# --- dag.json round trip -----------------------------------------------------------------------------------


def _finished_tree() -> Dag:
    dag = _tree()
    a = dag.node("a")
    a.status, a.answer, a.tokens, a.llm_calls = NodeStatus.SUCCEEDED, "First crack is at 196 °C.", 420, 2
    a.citations = [{"vault": "coffee", "path": "Roasting/First crack.md", "heading": None, "resolved": True}]
    a.packet = {"summary": "1C at 196 °C", "keywords": ["first crack"]}
    a.started_at, a.finished_at = 100.0, 101.5
    b = dag.node("b")
    b.status, b.error = NodeStatus.FAILED, {"class": "TimeoutError", "message": "slow"}
    dag.node("c").status = NodeStatus.PRUNED
    dag.node("c").note = "budget exhausted"
    return dag


def test_to_json_is_plain_json_with_status_values() -> None:
    data = _finished_tree().to_json()
    text = json.dumps(data)  # must not need default=str
    nodes = {n["id"]: n for n in json.loads(text)["nodes"]}
    assert nodes["a"]["status"] == "SUCCEEDED"
    assert nodes["a"]["duration_ms"] == 1500.0
    assert nodes["b"]["hard_deps"] == ["a"]
    assert nodes["c"]["soft_deps"] == ["a"]


def test_round_trip_keeps_statuses_deps_answers_and_everything_else() -> None:
    dag = _finished_tree()
    back = Dag.from_json(json.loads(json.dumps(dag.to_json())))
    assert len(back) == len(dag)
    for node in dag:
        again = back.node(node.id)
        assert again == node  # every field, statuses as enum members
        assert isinstance(again.status, NodeStatus)
    assert back.node("a").answer == "First crack is at 196 °C."
    assert back.node("b").hard_deps == ["a"]
    assert back.node("c").soft_deps == ["a"]
    assert back.node("b").error == {"class": "TimeoutError", "message": "slow"}


def test_round_trip_keeps_the_graph_structure_and_readiness() -> None:
    dag = _finished_tree()
    back = Dag.from_json(dag.to_json())
    assert set(back.graph.edges(data="kind")) == set(dag.graph.edges(data="kind"))
    assert back.root().id == "root"
    assert _ids(back.children("root")) == {"a", "b", "c"}
    assert _ids(back.ready()) == _ids(dag.ready()) == {"root"}
    assert back.critical_path_length() == dag.critical_path_length() == 3


def test_round_trip_of_a_dag_in_progress_keeps_what_is_left_to_do() -> None:
    dag = _tree()
    back = Dag.from_json(dag.to_json())
    assert _ids(back.ready()) == {"a", "c"}
    back.node("a").status = NodeStatus.SUCCEEDED
    assert _ids(back.ready()) == {"b", "c"}


def test_from_json_accepts_children_listed_before_their_parent() -> None:
    data = _tree().to_json()
    data["nodes"].reverse()
    back = Dag.from_json(data)
    assert back.root().id == "root"
    assert _ids(back.ready()) == {"a", "c"}


def test_from_json_of_an_empty_document_is_an_empty_dag() -> None:
    assert len(Dag.from_json({})) == 0
    assert len(Dag.from_json({"nodes": []})) == 0


def test_node_from_dict_ignores_unknown_fields_and_defaults_status() -> None:
    node = Node.from_dict({"id": "x", "task": "t", "stage": "s", "depth": 1, "added_later": True})
    assert node.status is NodeStatus.CREATED
    assert node.id == "x"


# --- subtasks the limits cut from a plan -----------------------------------------------------------------


def _cut_dag() -> Dag:
    dag = Dag()
    dag.add(Node("root", "goal", "goal", 0))
    dag.add(Node("a", "A", "gather_evidence", 1, parent="root"))
    dag.add(
        Node(
            "b", "B", "analyze", 1, parent="root", hard_deps=["a"], status=NodeStatus.PRUNED, cut="max_nodes"
        )
    )
    return dag


def test_cut_subtasks_are_not_children_of_the_run_but_are_kept() -> None:
    dag = _cut_dag()
    assert _ids(dag.children("root")) == {"a"}
    assert _ids(dag.children("root", cut=True)) == {"a", "b"}
    assert len(dag) == 3 and dag.planned() == 2
    back = Dag.from_json(json.loads(json.dumps(dag.to_json())))
    assert back.node("b").cut == "max_nodes" and _ids(back.children("root")) == {"a"}


def test_a_node_whose_only_subtasks_were_cut_is_ready_as_a_leaf() -> None:
    dag = Dag()
    dag.add(Node("root", "goal", "goal", 0))
    dag.add(Node("x", "X", "frame_question", 1, parent="root", status=NodeStatus.PRUNED, cut="max_depth"))
    assert dag.children("root") == [] and _ids(dag.ready()) == {"root"}
