"""Print the ONNX conformance pass counts at the end of a run that ran the cases."""


def pytest_terminal_summary(terminalreporter):
    import sys
    conformance = sys.modules.get("tinyflow.onnx.conformance")
    if conformance is None or not conformance.computed():
        return
    terminalreporter.section("ONNX conformance")
    for line in conformance.summary():
        terminalreporter.write_line(line)
