"""The package's layers (benchmarks/import_graph.py's LAYERS): imports only go down, and the engine's
generic layers (paths, abstract objects) know nothing of PyTorch."""
import importlib.util
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
_spec = importlib.util.spec_from_file_location("import_graph", BENCHMARKS / "import_graph.py")
graph = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(graph)


def test_no_import_climbs_a_layer_and_none_goes_round():
    edges = graph.graph()
    assert graph.climbing(edges) == []
    assert graph.cycles(edges) == []


def test_a_climbing_import_is_reported():
    """The check itself: the paths importing what calls do, the planner importing the engine."""
    edges = {"ddp_lint.analysis.flow": {"ddp_lint.analysis.effects"},
             "ddp_lint.planning.planner": {"ddp_lint.engine"},
             "ddp_lint.engine": {"ddp_lint.planning.planner"}}
    assert graph.climbing(edges) == [
        "ddp_lint.analysis.flow (analysis: paths) -> ddp_lint.analysis.effects (analysis: what calls do)",
        "ddp_lint.planning.planner (fix planning) -> ddp_lint.engine (engine)",
    ]


def test_every_module_has_a_layer_and_the_analysis_ones_their_own():
    for name in graph.modules():
        assert graph.layer_of(name) is not None, name
    assert graph.layer_of("ddp_lint.analysis.walker") < graph.layer_of("ddp_lint.analysis.flow")
    assert graph.layer_of("ddp_lint.planning.planner") > graph.layer_of("ddp_lint.engine")


def test_the_paths_and_the_abstract_objects_read_no_catalog():
    edges = graph.graph()
    for generic in ("ddp_lint.analysis.flow", "ddp_lint.analysis.heap"):
        assert "ddp_lint.catalog" not in edges[generic], generic
