import pytest
"""The run report: dynamic counts and plans' static routes add up, and a long loop keeps it small."""
from collections import Counter

from tinyflow.backends.base import RunReport

pytestmark = pytest.mark.usefixtures("backend")  # kernels: run once per available backend



def test_static_routes_and_calls_add_up_and_a_loop_of_plans_keeps_the_report_small():
    report = RunReport()
    report.small_calls["Add"] += 1
    report.host_calls["Concat"] += 2
    body = Counter({("small", "Add"): 2, ("host", "Concat"): 1})
    for _ in range(1000):  # a while loop's body plan adds its routes at every iteration
        report.add_static(body)
    assert report.small_ops == {"Add": 2001} and report.host_ops == {"Concat": 1002}
    assert len(report._static) <= 64
    report.clear()
    assert report.small_ops == {} and report.host_ops == {}
