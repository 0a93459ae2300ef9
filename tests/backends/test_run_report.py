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


def test_a_run_report_reads_as_a_dict_as_users_try_it():
    import json

    import numpy as np
    import pytest

    import tinyflow as tfl
    from tinyflow.backends.run_report import ReportKeyError

    with tfl.Graph().as_default():
        x = tfl.Placeholder(shape=(None, 3), name="x")
        y = tfl.relu(x @ tfl.Constant(np.ones((3, 2), np.float32))) + 1.0
        with tfl.Session() as sess:
            sess.run(y, {x: np.ones((4, 3), np.float32)})
            report = sess.backend.report
    as_dict = dict(report)  # was "TypeError: 'RunReport' object is not iterable"
    assert list(as_dict) == ["kernel_ops", "host_ops", "small_ops", "to_device", "to_host"]
    assert report["kernel_ops"] is report.kernel_ops and as_dict["host_ops"] == report.host_ops
    assert sum(sum(as_dict[key].values()) for key in ("kernel_ops", "host_ops", "small_ops")) >= 1
    plain = report.as_dict()
    assert json.loads(json.dumps(plain)) == plain and type(plain["host_ops"]) is dict
    assert "kernel_ops" in report and "kernel_op" not in report and report.get("kernel_op") is None
    with pytest.raises(ReportKeyError, match="no 'kernel_op'; its keys are kernel_ops, host_ops") as err:
        report["kernel_op"]
    assert isinstance(err.value, tfl.TinyflowError) and isinstance(err.value, KeyError)
