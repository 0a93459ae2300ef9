"""Print the ONNX conformance pass counts at the end of a run that ran the cases."""


def pytest_terminal_summary(terminalreporter):
    import sys
    conformance = sys.modules.get("conformance_cases")
    lines = conformance.summary() if conformance is not None else []
    if not lines:
        return
    terminalreporter.section("ONNX conformance")
    for line in lines:
        terminalreporter.write_line(line)
