"""Make the student version of the assignments: every solution block becomes a stub with its hint.

In the solutions (assignments/ in the repository) `# BEGIN SOLUTION`, a `# HINT: what to use, what to watch out
for` line (the comment lines right after it continue it), the solution and `# END SOLUTION` become
`# TODO: <hint>` and `raise NotImplementedError("<hint>")`; in C (`// BEGIN SOLUTION` ... `// END SOLUTION`),
a `/* TODO: <hint> */` comment.
"""
import os
import pathlib
import re
import shutil

from ..errors import TinyflowError

SOURCE = pathlib.Path(__file__).resolve().parent.parent.parent / "assignments"
COMMENT = {".py": "#", ".c": "//", ".h": "//"}
_SKIP = {"__pycache__", ".pytest_cache", ".ipynb_checkpoints"}
_DEFINITION = re.compile(r"^\s*(?:def|class)\s+(\w+)|^\s*(?:void|int|float|double|long)\s+\**(\w+)\s*\(")


class AssignmentSourceError(TinyflowError):
    """Solution markers that do not pair up, or a block without a hint."""


def strip_solutions(text, comment="#", where="<text>"):
    """The student version of one file's text: each solution block replaced by a stub raising its hint."""
    marker = re.escape(comment)
    begin, end = re.compile(rf"^(\s*){marker} BEGIN SOLUTION\s*$"), re.compile(rf"^\s*{marker} END SOLUTION\s*$")
    hint_line, comment_line = re.compile(rf"^\s*{marker} HINT:?\s?(.*)$"), re.compile(rf"^\s*{marker}\s?(.*)$")
    out, start, owner, parent = [], None, None, None  # start: the line of the open block's BEGIN SOLUTION
    for number, line in enumerate(text.splitlines(keepends=True), 1):
        opened = begin.match(line)
        if start is None:
            defined = _DEFINITION.match(line)
            if defined:  # a method is named with its class: "AdamUpdate.update"
                name = defined.group(1) or defined.group(2)
                top = not line[:1].isspace()
                owner, parent = (name, name) if top else (f"{parent}.{name}" if parent else name, parent)
            if end.match(line):
                raise AssignmentSourceError(f"{where}:{number}: END SOLUTION without BEGIN SOLUTION")
            if opened:
                start, indent, hint, solution = number, opened.group(1), [], False
            else:
                out.append(line)
        elif opened:
            raise AssignmentSourceError(f"{where}:{number}: BEGIN SOLUTION inside the block opened at line {start}")
        elif end.match(line):
            if not hint:
                raise AssignmentSourceError(f"{where}:{start}: the solution block has no '{comment} HINT:' line; "
                                            "every stub must tell the student where to start")
            hint, label = " ".join(hint), f"{os.path.basename(where)}, {owner}()" if owner else os.path.basename(where)
            out.append(f"{indent}/* TODO: {hint} */\n" if comment != "#" else
                       f"{indent}# TODO: {hint}\n{indent}raise NotImplementedError({f'TODO in {label}: {hint}'!r})\n")
            start = None
        else:
            hinted, continued = hint_line.match(line), comment_line.match(line)
            if not solution and (hinted or (hint and continued)):  # the hint comes first; comment lines continue it
                hint.append((hinted or continued).group(1).strip())
            else:
                solution = True
    if start is not None:
        raise AssignmentSourceError(f"{where}:{start}: BEGIN SOLUTION without END SOLUTION")
    return "".join(out)


def make_student(out, source=SOURCE, force=False):
    """Write the student version of `source` (the solutions) into the folder `out`; returns the files written."""
    source, out = pathlib.Path(source), pathlib.Path(out)
    if not (source / "tests").is_dir():
        raise AssignmentSourceError(f"{source} does not hold the assignments (no tests/ folder); "
                                    "run from a tinyflow checkout or pass --source")
    if out.exists() and any(out.iterdir()) and not force:
        raise AssignmentSourceError(f"{out} exists and is not empty: choose a new folder (or --force to overwrite)")
    if out.resolve() == source.resolve() or source.resolve() in out.resolve().parents:
        raise AssignmentSourceError(f"{out} is inside the solutions folder {source}: choose a folder outside it")
    written = []
    for path in sorted(source.rglob("*")):
        relative = path.relative_to(source)
        if path.is_dir() or _SKIP & set(relative.parts) or path.suffix == ".pyc":
            continue
        target = out / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        comment = COMMENT.get(path.suffix)
        if comment is None or relative.parts[0] == "tests":  # tests and data are handed out as they are
            shutil.copyfile(path, target)
        else:
            stripped = strip_solutions(path.read_text(encoding="utf-8"), comment, where=os.fspath(relative))
            target.write_text(stripped, encoding="utf-8")
        written.append(target)
    return written
