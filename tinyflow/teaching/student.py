"""Make the student version of the assignments: every solution block becomes a stub with its hint.

In the solutions (assignments/ in the repository) a block between marker comments

    # BEGIN SOLUTION
    # HINT: what to use, what to watch out for
    # (comment lines right after the HINT line continue it)
    ...the solution...
    # END SOLUTION

becomes, in Python, `# TODO: <hint>` and `raise NotImplementedError("<hint>")`, and in C
(`// BEGIN SOLUTION` ... `// END SOLUTION`) a `/* TODO: <hint> */` comment.
"""
import os
import pathlib
import re
import shutil

from ..errors import TinyflowError

SOURCE = pathlib.Path(__file__).resolve().parent.parent.parent / "assignments"
COMMENT = {".py": "#", ".c": "//", ".h": "//"}
_SKIP = {"__pycache__", ".pytest_cache", ".ipynb_checkpoints"}


class AssignmentSourceError(TinyflowError):
    """Solution markers that do not pair up, or a block without a hint."""


def strip_solutions(text, comment="#", where="<text>"):
    """The student version of one file's text: each solution block replaced by a stub raising its hint."""
    marker = re.escape(comment)
    begin = re.compile(rf"^(\s*){marker} BEGIN SOLUTION\s*$")
    end = re.compile(rf"^\s*{marker} END SOLUTION\s*$")
    hint_line = re.compile(rf"^\s*{marker} HINT:?\s?(.*)$")
    comment_line = re.compile(rf"^\s*{marker}\s?(.*)$")
    definition = re.compile(r"^\s*(?:def|class)\s+(\w+)|^\s*(?:void|int|float|double|long)\s+\**(\w+)\s*\(")
    out, block, indent, hint, start, owner, parent = [], None, "", [], 0, None, None
    for number, line in enumerate(text.splitlines(keepends=True), 1):
        if block is None:
            defined = definition.match(line)
            if defined:
                name = defined.group(1) or defined.group(2)
                top = not line[:1].isspace()  # a method is named with its class: "AdamUpdate.update"
                owner, parent = (name, name) if top else (f"{parent}.{name}" if parent else name, parent)
            opened = begin.match(line)
            if opened:
                block, indent, hint, start = [], opened.group(1), [], number
            elif end.match(line):
                raise AssignmentSourceError(f"{where}:{number}: END SOLUTION without BEGIN SOLUTION")
            else:
                out.append(line)
            continue
        if begin.match(line):
            raise AssignmentSourceError(f"{where}:{number}: BEGIN SOLUTION inside the block opened at line {start}")
        if end.match(line):
            if not hint:
                raise AssignmentSourceError(f"{where}:{start}: the solution block has no '{comment} HINT:' line; "
                                            "every stub must tell the student where to start")
            label = f"{os.path.basename(where)}, {owner}()" if owner else os.path.basename(where)
            out.extend(_stub(indent, " ".join(hint), comment, label))
            block = None
            continue
        hinted, continued = hint_line.match(line), comment_line.match(line)
        if not block and (hinted or (hint and continued)):  # the hint comes first; comment lines continue it
            hint.append((hinted or continued).group(1).strip())
        else:
            block.append(line)
    if block is not None:
        raise AssignmentSourceError(f"{where}:{start}: BEGIN SOLUTION without END SOLUTION")
    return "".join(out)


def _stub(indent, hint, comment, label):
    if comment == "#":
        return [f"{indent}# TODO: {hint}\n", f"{indent}raise NotImplementedError({f'TODO in {label}: {hint}'!r})\n"]
    return [f"{indent}/* TODO: {hint} */\n"]


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
            text = path.read_text(encoding="utf-8")
            target.write_text(strip_solutions(text, comment, where=os.fspath(relative)), encoding="utf-8")
        written.append(target)
    return written
