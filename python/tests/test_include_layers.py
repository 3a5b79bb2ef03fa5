"""Includes run down the floors that HACKING.md names, never up or sideways.

An area is a folder of the library, its public headers and its sources together
(`include/ibdkit/<area>/` and `src/<area>/`); `cli/`, `bench/` and `python/bindings/` are areas of
their own on the top floors, and the files directly in `include/ibdkit/` and `src/` (`error.h`,
`span.h`) are the root, which every area may include. HACKING.md's table *Floors* is the one place
that says, bottom to top, which areas each area may include: a list of areas, or "all below" (every
area on a lower floor). This test reads that table and every `#include` of the areas' files
(`<ibdkit/...>`, and quoted includes found beside the file or under `include/`, `src/`, `bench/`,
`cli/` or `python/bindings/`), and fails on an include the table does not allow, or on a table
that names an area on its own floor or above (which would let a circle in).

Needs no build and no network.
"""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]

# Folders whose files are checked, and where a quoted include is looked for (after the file's own folder).
CHECKED = ("include", "src", "cli", "bench", "python/bindings")
ROOT_AREA = "ibdkit"
INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^">]+)[">]', re.M)
ROW = re.compile(r"^\|\s*(\d+)\s*\|([^|]*)\|([^|]*)\|")
NAME = re.compile(r"`([^`]+)`")


def parse_floors(markdown):
    """{area: (floor, allowed areas or None for all below)} from the Floors table of `markdown`."""
    section = re.search(r"^## Floors\n(.*?)(?=^## |\Z)", markdown, re.M | re.S)
    assert section, "HACKING.md has no '## Floors' section"
    floors = {}
    for line in section.group(1).splitlines():
        m = ROW.match(line)
        if not m:
            continue
        floor = int(m.group(1))
        allowed = None if "all below" in m.group(3) else {n.strip("/") for n in NAME.findall(m.group(3))}
        for area in NAME.findall(m.group(2)):
            area = area.strip("/")
            assert area not in floors, f"HACKING.md, Floors: {area} is listed twice"
            floors[area] = (floor, allowed)
    assert floors, "HACKING.md, Floors: the table has no rows"
    return floors


def table_errors(floors):
    """What is wrong with the table itself: an allowed area unknown, or not on a lower floor."""
    errors = []
    for area, (floor, allowed) in sorted(floors.items()):
        for other in sorted(allowed or ()):
            if other not in floors:
                errors.append(f"HACKING.md, Floors: {area} may include {other}, which is no area of the table")
            elif floors[other][0] >= floor:
                errors.append(
                    f"HACKING.md, Floors: {area} (floor {floor}) may include {other} (floor {floors[other][0]}): "
                    "only lower floors, or the floors can circle"
                )
    return errors


def area_of(rel):
    """The area of a path relative to the repository (a pathlib.PurePosixPath), or None."""
    parts = rel.parts
    if parts[:2] == ("python", "bindings"):
        return "python/bindings"
    if parts[0] in ("cli", "bench"):
        return parts[0]
    if parts[:2] == ("include", "ibdkit"):
        return parts[2] if len(parts) > 3 else ROOT_AREA
    if parts[0] == "src":
        return parts[1] if len(parts) > 2 else ROOT_AREA
    return None


def resolve(root, source, kind, name):
    """The included file's path relative to `root`, or None when it is outside the tree's areas."""
    if name.startswith("ibdkit/"):
        return pathlib.PurePosixPath("include") / name
    if kind != '"':
        return None
    for base in (source.parent, *(root / d for d in CHECKED)):
        candidate = base / name
        if candidate.is_file():
            return pathlib.PurePosixPath(candidate.resolve().relative_to(root.resolve()).as_posix())
    return None


def source_files(root):
    for d in CHECKED:
        for path in sorted((root / d).rglob("*")):
            if path.suffix in (".h", ".cpp") and area_of(pathlib.PurePosixPath(path.relative_to(root).as_posix())):
                yield path


def violations(root, floors):
    """Every include under `root` that `floors` does not allow, as one readable line each."""
    out = []
    floors = {ROOT_AREA: (0, set()), **floors}
    for path in source_files(root):
        rel = pathlib.PurePosixPath(path.relative_to(root).as_posix())
        area = area_of(rel)
        if area not in floors:
            out.append(f"{rel}: its area {area} has no row in HACKING.md's Floors table")
            continue
        floor, allowed = floors[area]
        text = path.read_text(errors="replace")
        for m in INCLUDE.finditer(text):
            target = resolve(root, path, m.group(1), m.group(2))
            other = area_of(target) if target else None
            if other is None or other in (area, ROOT_AREA):
                continue
            if other not in floors:
                ok, why = False, f"{other} has no row in the Floors table"
            elif allowed is None:
                ok, why = floors[other][0] < floor, f"{other} is on floor {floors[other][0]}, not below"
            else:
                ok, why = other in allowed, f"{area}'s row does not list {other}"
            if not ok:
                line = text.count("\n", 0, m.start()) + 1
                out.append(
                    f"{rel}:{line} includes {m.group(2)}: {area} (floor {floor}) may not include {other} ({why}; "
                    "HACKING.md, Floors)"
                )
    return out


def test_the_floors_table_runs_one_way():
    floors = parse_floors((ROOT / "HACKING.md").read_text())
    assert table_errors(floors) == []


def test_every_area_has_a_floor():
    floors = parse_floors((ROOT / "HACKING.md").read_text())
    present = {area_of(pathlib.PurePosixPath(p.relative_to(ROOT).as_posix())) for p in source_files(ROOT)}
    assert sorted(present - set(floors) - {ROOT_AREA}) == [], "areas without a row in HACKING.md's Floors table"
    assert sorted(set(floors) - present) == [], "rows of HACKING.md's Floors table that name no folder"


def test_no_include_runs_up_or_sideways():
    floors = parse_floors((ROOT / "HACKING.md").read_text())
    found = violations(ROOT, floors)
    assert found == [], "includes against HACKING.md's floors:\n" + "\n".join(found)


FAKE_FLOORS = """
## Floors

| floor | area | may include |
|---|---|---|
| 3 | `cli` | all below |
| 2 | `high`, `side` | `low` |
| 1 | `low` | |

## Next
"""


def plant(root, rel, text):
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_the_check_fails_on_a_planted_upward_include(tmp_path):
    floors = parse_floors(FAKE_FLOORS)
    assert floors == {"cli": (3, None), "high": (2, {"low"}), "side": (2, {"low"}), "low": (1, set())}
    plant(tmp_path, "include/ibdkit/error.h", "#pragma once\n")
    plant(tmp_path, "include/ibdkit/low/a.h", "#pragma once\n#include <ibdkit/error.h>\n")
    plant(tmp_path, "src/low/a.cpp", '#include <ibdkit/low/a.h>\n#include "low/private.h"\n')
    plant(tmp_path, "src/low/private.h", "#pragma once\n#include <vector>\n")
    plant(tmp_path, "include/ibdkit/high/b.h", "#pragma once\n#include <ibdkit/low/a.h>\n")
    plant(tmp_path, "src/side/c.cpp", '#include "low/private.h"\n')
    plant(tmp_path, "cli/main.cpp", '#include <ibdkit/high/b.h>\n#include "side/c.cpp"\n')
    assert violations(tmp_path, floors) == []

    plant(tmp_path, "src/low/a.cpp", '#include <ibdkit/low/a.h>\n\n#include <ibdkit/high/b.h>\n')
    plant(tmp_path, "src/side/c.cpp", '#include "../high/d.h"\n')
    plant(tmp_path, "src/high/d.h", "#pragma once\n")
    found = violations(tmp_path, floors)
    assert len(found) == 2, found
    assert found[0].startswith("src/low/a.cpp:3 includes ibdkit/high/b.h: low (floor 1) may not include high")
    assert found[1].startswith("src/side/c.cpp:1 includes ../high/d.h: side (floor 2) may not include high")


def test_the_table_may_not_point_up():
    floors = parse_floors(FAKE_FLOORS.replace("| 1 | `low` | |", "| 1 | `low` | `high` |"))
    assert table_errors(floors) == ["HACKING.md, Floors: low (floor 1) may include high (floor 2): only lower floors, "
                                    "or the floors can circle"]


# The CLI is built from the library and two components of the repository that are not part of the
# library: the benchmark harness (`ibdkit_bench`) and the chain generator (`ibdkit_gen`). It includes
# the library's public headers (include/ibdkit/), its own, and each component's interface header
# below, which in turn may include only public and standard headers: so no CLI file reaches a private
# header of the library, directly or through a component (issue #54).
COMPONENT_INTERFACES = {
    "bench/bench.h": "`ibdkit bench`: the cases, the registry and the run (benchmarks add bench_case.h)",
    "src/gen/chain_gen.h": "gen-chain and `run`: the generator's options, statistics and writer",
}


def quoted_or_ibdkit_includes(root, path):
    """[(line, the header an include of `path` resolves to, relative to `root`)]; standard headers
    and unresolved names are left out."""
    text = path.read_text(errors="replace")
    out = []
    for m in INCLUDE.finditer(text):
        target = resolve(root, path, m.group(1), m.group(2))
        if target is not None:
            out.append((text.count("\n", 0, m.start()) + 1, target))
    return out


def cli_private_includes(root, interfaces=COMPONENT_INTERFACES):
    """{private header (relative to `root`): [the CLI's "file:line" that include it]}: a header that
    is neither public, nor the CLI's own, nor a component's interface."""
    out = {}
    for path in sorted((root / "cli").glob("*")):
        if path.suffix not in (".h", ".cpp"):
            continue
        for line, target in quoted_or_ibdkit_includes(root, path):
            if target.parts[0] in ("cli", "include") or str(target) in interfaces:
                continue
            out.setdefault(str(target), []).append(f"cli/{path.name}:{line}")
    return out


def interface_errors(root, interfaces=COMPONENT_INTERFACES):
    """A component's interface that includes a header outside include/ (its own folder's interface
    headers aside), or that no longer exists."""
    errors = []
    for rel in sorted(interfaces):
        path = root / rel
        if not path.exists():
            errors.append(f"COMPONENT_INTERFACES names {rel}, which does not exist: take it off the list")
            continue
        for line, target in quoted_or_ibdkit_includes(root, path):
            if target.parts[0] != "include" and str(target) not in interfaces:
                errors.append(f"{rel}:{line} includes {target}, a private header: the CLI includes {rel}, "
                              "so it may include only public ones (include/ibdkit/)")
    return errors


def cli_include_errors(found):
    return [f"{', '.join(where)} include{'s' if len(where) == 1 else ''} {h}, a private header: use a public one "
            "(include/ibdkit/)"
            for h, where in sorted(found.items())]


def test_the_cli_includes_public_headers_and_the_components_interfaces():
    assert cli_include_errors(cli_private_includes(ROOT)) == []
    assert interface_errors(ROOT) == []


def test_the_cli_check_fails_on_a_planted_private_include(tmp_path):
    plant(tmp_path, "include/ibdkit/low/a.h", "#pragma once\n")
    plant(tmp_path, "src/low/private.h", "#pragma once\n")
    plant(tmp_path, "src/tool/tool.h", "#pragma once\n#include <ibdkit/low/a.h>\n")
    plant(tmp_path, "cli/cmd.h", "#pragma once\n")
    plant(tmp_path, "cli/cmd.cpp", '#include "cmd.h"\n#include <ibdkit/low/a.h>\n#include "low/a.h"\n'
          '#include "tool/tool.h"\n')
    tool = {"src/tool/tool.h": "x"}
    assert cli_include_errors(cli_private_includes(tmp_path, tool)) == []
    assert interface_errors(tmp_path, tool) == []
    plant(tmp_path, "cli/cmd.cpp", '#include "cmd.h"\n\n#include "low/private.h"\n')
    assert cli_include_errors(cli_private_includes(tmp_path, tool)) == [
        "cli/cmd.cpp:3 includes src/low/private.h, a private header: use a public one (include/ibdkit/)",
    ]
    plant(tmp_path, "src/tool/tool.h", "#pragma once\n#include \"low/private.h\"\n")
    assert interface_errors(tmp_path, {**tool, "src/tool/gone.h": "x"}) == [
        "COMPONENT_INTERFACES names src/tool/gone.h, which does not exist: take it off the list",
        "src/tool/tool.h:2 includes src/low/private.h, a private header: the CLI includes src/tool/tool.h, "
        "so it may include only public ones (include/ibdkit/)",
    ]
