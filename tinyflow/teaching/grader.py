"""The autograder: run the official tests of an assignment against a student's folder, score each test.

The tests come from the teacher's copy (so a student cannot edit them); the student's modules are put
first on the path through $TINYFLOW_ASSIGNMENT_PATH, read by the tests' conftest.py. pytest runs in a
subprocess with a time limit, so a crash or an endless loop in student code costs only its score.
"""
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

from ..errors import TinyflowError
from .student import SOURCE

ASSIGNMENT = re.compile(r"^assignment\d+$")


class GradingError(TinyflowError):
    """The grader cannot run: unknown assignment, missing folder, or pytest itself failed."""


def assignments(source=SOURCE):
    """The assignment names the tests know, e.g. ['assignment1', ..., 'assignment6']."""
    found = {m.group(1) for p in pathlib.Path(source, "tests").glob("test_assignment*.py")
             if (m := re.match(r"test_(assignment\d+)", p.name))}
    return sorted(found, key=lambda name: int(name[len("assignment"):]))


def grade(assignment, path=None, source=SOURCE, timeout=900):
    """Score `assignment` ('assignmentN' or 'all') on the student's folder `path`; returns the report dict."""
    source = pathlib.Path(source)
    known = assignments(source)
    if assignment != "all" and assignment not in known:
        raise GradingError(f"unknown assignment '{assignment}'; the tests in {source / 'tests'} know: "
                           f"{', '.join(known) or 'none'} (or 'all')")
    path = pathlib.Path(path if path is not None else source).resolve()
    if not path.is_dir():
        raise GradingError(f"the student folder {path} does not exist")
    with tempfile.TemporaryDirectory(prefix="tinyflow-grade-") as scratch:
        xml = pathlib.Path(scratch, "results.xml")
        command = [sys.executable, "-m", "pytest", str(source / "tests"), "-q", "-p", "no:cacheprovider",
                   f"--junitxml={xml}", "-o", "junit_family=xunit1"]
        if assignment != "all":
            command += ["-m", assignment]
        env = {**os.environ, "TINYFLOW_ASSIGNMENT_PATH": str(path), "PYTHONDONTWRITEBYTECODE": "1"}
        try:
            run = subprocess.run(command, cwd=scratch, env=env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise GradingError(f"the tests of {assignment} did not finish within {timeout} s "
                               "(an endless loop in the student's code?)") from None
        if not xml.exists():
            raise GradingError(f"pytest could not run the tests (exit code {run.returncode}):\n"
                               f"{run.stdout[-3000:]}{run.stderr[-3000:]}")
        tests = _results(xml)
    if not tests:
        raise GradingError(f"no test of {assignment} was collected from {source / 'tests'}")
    score = sum(t["points"] for t in tests)
    return dict(assignment=assignment, path=str(path), score=score, max_score=len(tests), tests=tests)


def _results(xml):
    """One entry per test case of a JUnit XML file: name, outcome, points and the first line of the failure."""
    tests = []
    for case in ET.parse(xml).getroot().iter("testcase"):
        problem = next((child for child in case if child.tag in ("failure", "error", "skipped")), None)
        outcome = "passed" if problem is None else {"failure": "failed"}.get(problem.tag, problem.tag)
        message = "" if problem is None else (problem.get("message") or problem.text or "").strip()
        module = case.get("classname", "").rsplit(".", 1)[-1]
        owner = re.match(r"test_(assignment\d+)", module)
        first_line = message.splitlines()[0][:300] if message else ""
        tests.append(dict(assignment=owner.group(1) if owner else module, test=case.get("name"), outcome=outcome,
                          points=1 if outcome == "passed" else 0, message=first_line))
    return tests


def format_report(report):
    """The report as a table a student can read: one line per test, then the total."""
    lines = [f"grading {report['assignment']} in {report['path']}"]
    for t in report["tests"]:
        mark = "PASS" if t["points"] else t["outcome"].upper()
        lines.append(f"  {mark:7} {t['points']}/1  {t['assignment']}::{t['test']}"
                     + (f"\n            {t['message']}" if t["message"] and not t["points"] else ""))
    lines.append(f"score: {report['score']}/{report['max_score']}")
    return "\n".join(lines)


def write_report(report, path):
    """Write the report as JSON; returns the path."""
    pathlib.Path(path).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return path
