#!/usr/bin/env python3
"""Fail (exit 1) when the modules of a Rust crate import each other in a cycle.

Usage: python3 scripts/check_cycles.py [--root src] [--crate-name crate] [--allow FILE]
                                      [--layers FILE] [--self-test]

An approximate model, without rustc or dependencies:
* A node per .rs file, found by following `mod x;` (x.rs or x/mod.rs) from lib.rs or main.rs.
  An inline `mod x {..}` is a scope of its own but part of its file's node. `#[cfg(test)]`
  items are skipped (`mod tests {..}`, test-only `mod x;` files, uses, fns); so are comments
  (doc comments too), strings, raw strings and char literals.
* An edge A -> B is a path written in A that resolves to something B defines:
  - each leaf of a private `use` (nested braces, `as`, `self`, globs, multi-line). A `pub`,
    `pub(crate)`, `pub(super)`, `pub(in ..)` use is a facade (re-export), no edge by itself;
    a `use` naming a module, not an item, is none either: the paths through it are;
  - each `x::y` path in code or signatures whose head is `crate`, `$crate`, `self`, `super`,
    a child module or an imported name.
* Resolution walks the segments from the starting module (the head `crate`, `self`, `super`,
  `super::super`, or else the current module, as in 2018 uniform paths): a child module moves
  into it; an item the module defines (struct, enum, union, trait, type, fn, const, static,
  macro_rules!) ends there; a name it imports (any `use`, public or private) is followed to
  its target, with cycle protection; else its glob imports are tried. `#[macro_export]`
  macros are `crate::name`. Unresolved names (std, other crates) make no edge; self-edges
  are dropped. So `mod child;` is no edge, and a child using its parent's items is one.
* A cycle is a strongly connected component of more than one node. The allow file (default
  cycles.allow beside this script, if present) lists tolerated cycles, one a line, as printed
  after "modules:" (sorted paths, comma-separated; `#` comments). A cycle inside an allowed
  one passes; a line of this crate (paths starting with --crate-name) that matches no cycle
  is stale and fails, so the list only shrinks.
* Layers: the layers file (default layers.txt beside this script, if present) names layers
  bottom first, one a line, `name: path path ...`; a module belongs to the layer of the
  longest path that is the module itself or an ancestor of it. An edge from a module to a
  module of a higher layer fails: layers import only downward (or within themselves).
  Modules in no layer are not checked.
"""

import argparse
import bisect
import contextlib
import io
import re
import sys
import tempfile
from pathlib import Path

BLANK = re.compile(r"""//[^\n]*|/\*.*?\*/|(?<!\w)b?r(\#*)".*?"\1|(?:(?<!\w)b)?"(?:\\.|[^"\\])*"
    |(?:(?<!\w)b)?'(?:\\(?:u\{[0-9a-fA-F]*\}|x[0-9a-fA-F]{2}|.)|[^\\'\n])'""", re.S | re.X)
TOKEN = re.compile(r"::|r\#[A-Za-z_]\w*|[A-Za-z_]\w*|\d\w*|'\w+|\S")
ITEMS = {"struct", "enum", "union", "trait", "type", "fn", "const", "static"}
NOT_NAMES = {"fn", "unsafe", "async", "extern", "mut", "_"}
CLOSE = {"{": "}", "(": ")", "[": "]"}


def is_ident(t):
    return t[0].isalpha() or t[0] == "_"  # not a number, lifetime or punctuation


class Scope:
    """A module: a file's, or an inline `mod x {..}` inside one (node = the file's)."""

    def __init__(self, name, parent, file, folder):
        self.parent, self.file, self.folder = parent, file, folder
        self.path = name if parent is None else f"{parent.path}::{name}"
        self.root = self if parent is None else parent.root
        self.node = self if parent is None or parent.file != file else parent.node
        self.children, self.items, self.imports, self.globs, self.macros = {}, set(), {}, [], {}


def closer(toks, i):
    """Index of the bracket closing the one at toks[i]."""
    want, depth = CLOSE[toks[i][0]], 0
    for j in range(i, len(toks)):
        depth += (toks[j][0] == toks[i][0]) - (toks[j][0] == want)
        if depth == 0:
            return j
    return len(toks) - 1


def skip_item(toks, i):
    """Index after the item starting at toks[i]: its `;`, or its `{..}` block."""
    depth = 0
    while i < len(toks):
        t = toks[i][0]
        depth += (t in "([") - (t in ")]") if len(t) == 1 else 0
        if depth == 0 and t == ";":
            return i + 1
        if depth == 0 and t == "{":
            return closer(toks, i) + 1
        i += 1
    return i


def use_tree(ts, i, prefix, out):
    """Parse the use tree at ts[i]; append (segments, alias, is_glob, line) to out."""
    segs = list(prefix)
    while True:
        t, line = ts[i]
        if t == "::" and not segs:
            segs = ["::"]  # `::name`: an extern crate
        elif t == "{":
            i += 1
            while ts[i][0] not in ("}", ";"):
                i = use_tree(ts, i, segs, out)
                i += ts[i][0] == ","
            return i + 1
        elif t == "*":
            out.append((segs, None, True, line))
            return i + 1
        elif t != "$" and t != "::":
            segs = segs + [t]
            if ts[i + 1][0] != "::":
                alias, i = segs[-1], i + 1
                if ts[i][0] == "as":
                    alias, i = ts[i + 1][0], i + 2
                if segs[-1] == "self":
                    segs = segs[:-1]
                    alias = (segs[-1] if segs else None) if alias == "self" else alias
                out.append((segs, None if alias == "_" else alias, False, line))
                return i
        i += 1


def load(scope, refs):
    """Read scope's file: its names, child modules (recursively) and paths into refs."""
    text = BLANK.sub(lambda m: "\n" * m.group().count("\n") + " ",
                     scope.file.read_text(encoding="utf-8", errors="replace"))
    nl = [m.start() for m in re.finditer("\n", text)]
    toks = [(m.group().removeprefix("r#"), bisect.bisect(nl, m.start()) + 1)
            for m in TOKEN.finditer(text)] + [(";", len(nl) + 1)] * 3
    stack, i, n = [("mod", scope)], 0, len(toks) - 3
    test = export = pub = False
    while i < n:
        (t, line), (t1, _), (t2, _) = toks[i], toks[i + 1], toks[i + 2]
        kind, sc = stack[-1]
        if t == "#" and (t1 == "[" or t1 == "!" and t2 == "["):
            j = i + 1 + (t1 == "!")
            k = closer(toks, j)
            attr = "".join(x for x, _ in toks[j + 1:k])
            test |= t1 == "[" and re.match(r"cfg\((all\()?test\b", attr) is not None
            export |= attr == "macro_export"
            i = k + 1
            continue
        if test:
            i, test, pub = skip_item(toks, i), False, False
            continue
        if t == "pub":
            pub, i = True, (closer(toks, i + 1) + 1 if t1 == "(" else i + 1)
            continue
        if t == "use":
            k, out = next(j for j in range(i, len(toks)) if toks[j][0] == ";") + 1, []
            use_tree(toks[i + 1:k] + [(";", line)], 0, [], out)
            for segs, alias, glob, ln in out:
                if alias:
                    sc.imports[alias] = (sc, segs)
                if glob:
                    sc.globs.append((sc, segs))
                if not pub:
                    refs.append((sc, segs, ln, glob))
            i, pub = k, False
            continue
        if t == "mod" and is_ident(t1) and t2 in (";", "{"):
            folder = sc.folder / t1
            if t2 == "{":
                sc.children[t1] = child = Scope(t1, sc, sc.file, folder)
                stack.append(("mod", child))
            else:
                f = next((f for f in (sc.folder / f"{t1}.rs", folder / "mod.rs") if f.is_file()), None)
                if f is None:
                    print(f"warning: {scope.file}:{line}: no file for `mod {t1};`", file=sys.stderr)
                else:
                    sc.children[t1] = child = Scope(t1, sc, f, f.parent if f.name == "mod.rs" else folder)
                    load(child, refs)
            i, pub, export = i + 3, False, False
            continue
        if t == "{":
            stack.append(("code", sc))
        elif t == "}" and len(stack) > 1:
            stack.pop()
        elif kind == "mod" and t in ITEMS and is_ident(t1) and t1 not in NOT_NAMES:
            sc.items.add(t1)
        elif t == "macro_rules" and t1 == "!" and is_ident(t2):
            sc.items.add(t2)
            if export:
                sc.root.macros[t2] = sc
        elif (is_ident(t) or t == "$" and t1 == "crate") and toks[i - 1][0] != "::":
            j, segs = (i + 2, ["crate"]) if t == "$" else (i + 1, [t])
            while toks[j][0] == "::" and is_ident(toks[j + 1][0]):
                segs.append(toks[j + 1][0])
                j += 2
            if len(segs) > 1:
                refs.append((sc, segs, line, False))
                i = j - 1
        pub = export = False
        i += 1


def resolve(sc, segs, seen=frozenset()):
    """(scope, names_a_module) for what `segs` names from module sc, or None."""
    head, rest = segs[0], list(segs[1:])
    cur = {"crate": sc.root, "self": sc, "super": sc.parent, "::": None}.get(head, sc)
    if head not in ("crate", "self", "super", "::"):
        rest = list(segs)
    while rest and rest[0] == "super" and cur is not None:
        cur = cur.parent
        rest.pop(0)
    return None if cur is None else walk(cur, rest, seen)


def walk(cur, rest, seen):
    for k, name in enumerate(rest):
        if name in cur.children:
            cur = cur.children[name]
            continue
        if name in cur.items or name in cur.macros:
            return (cur if name in cur.items else cur.macros[name]), False
        if (id(cur), name) in seen:
            return None
        seen = seen | {(id(cur), name)}
        if name in cur.imports:
            r = resolve(*cur.imports[name], seen)
            if r is None or not r[1]:
                return r
            cur = r[0]
            continue
        for gsc, gsegs in cur.globs:
            g = resolve(gsc, gsegs, seen)
            r = g and g[1] and walk(g[0], rest[k:], seen)
            if r:
                return r
        return None
    return cur, True


def analyze(root, crate_name="crate"):
    """Return (module paths, {(a, b): (file, line)}) for the crate under root."""
    root = Path(root)
    top = next((root / f for f in ("lib.rs", "main.rs") if (root / f).is_file()), None)
    if top is None:
        sys.exit(f"error: no lib.rs or main.rs in {root}")
    crate, refs = Scope(crate_name, None, top, root), []
    load(crate, refs)
    edges, nodes, todo = {}, [], [crate]
    while todo:
        sc = todo.pop()
        nodes += [sc.path] if sc.node is sc else []
        todo += sc.children.values()
    for sc, segs, line, glob in refs:
        r = resolve(sc, segs)
        if r is None or (r[1] and not glob):
            continue
        a, b = sc.node.path, r[0].node.path
        if a != b:
            edges.setdefault((a, b), f"{sc.file}:{line}")
    return sorted(nodes), edges


def cycles(nodes, edges):
    """Strongly connected components of more than one node (Tarjan), sorted."""
    succ = {v: [] for v in nodes}
    for a, b in edges:
        succ[a].append(b)
    index, low, stack, out = {}, {}, [], []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in succ[v]:
            if w not in index:
                visit(w)
            if w in stack:
                low[v] = min(low[v], low[w])
        if low[v] == index[v]:
            comp = stack[stack.index(v):]
            del stack[stack.index(v):]
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(max(1000, 4 * len(nodes)))
    for v in (v for v in nodes if v not in index):
        visit(v)
    return sorted(out)


def report(nodes, edges, allowed, crate_name):
    """Print the cycles; return the exit status."""
    status, found = 0, cycles(nodes, edges)
    for comp in found:
        ok = any(set(comp) <= a for a in allowed)
        status |= not ok
        print(f"{'allowed ' if ok else ''}import cycle among {len(comp)} modules: {', '.join(comp)}")
        for (a, b), where in sorted(edges.items()):
            if a in comp and b in comp:
                print(f"  {a} -> {b}  ({where})")
    mine = lambda p: p == crate_name or p.startswith(crate_name + "::")
    for a in sorted(sorted(a) for a in allowed if all(map(mine, a)) and set(a) not in map(set, found)):
        status = 1
        print(f"stale allow entry (that cycle is gone or smaller; remove or update it): {', '.join(a)}")
    if not found:
        print(f"no import cycle among {len(nodes)} modules")
    return status


def read_layers(path):
    """[(name, [module paths])], bottom first, from `name: path path ...` lines."""
    lines = Path(path).read_text().splitlines() if path and Path(path).is_file() else []
    out = []
    for ln in lines:
        ln = ln.split("#")[0].strip()
        if ln:
            name, _, paths = ln.partition(":")
            out.append((name.strip(), paths.split()))
    return out


def check_layers(edges, layers):
    """Print each edge that imports from a higher layer; return the exit status."""
    def rank(module):
        best = None
        for i, (_, paths) in enumerate(layers):
            for p in paths:
                if (module == p or module.startswith(p + "::")) and (best is None or len(p) > best[1]):
                    best = (i, len(p))
        return None if best is None else best[0]
    status, checked = 0, 0
    for (a, b), where in sorted(edges.items()):
        ra, rb = rank(a), rank(b)
        checked += ra is not None and rb is not None
        if ra is not None and rb is not None and rb > ra:
            status = 1
            print(f"upward import: {a} (layer {layers[ra][0]}) -> {b} (layer {layers[rb][0]})  ({where})")
    if checked and not status:
        print(f"layers: all {checked} imports between layered modules go downward")
    return status


def read_allow(path):
    lines = Path(path).read_text().splitlines() if path and Path(path).is_file() else []
    return [frozenset(w) for w in (re.split(r"[,\s]+", ln.split("#")[0].strip()) for ln in lines) if w != [""]]


def self_test():
    """Unit tests on small synthetic crates written to a temp dir."""
    def check(files, want_cycles, want_edges=(), no_edges=()):
        with tempfile.TemporaryDirectory() as d:
            for name, body in files.items():
                (Path(d) / name).parent.mkdir(parents=True, exist_ok=True)
                (Path(d) / name).write_text(body)
            nodes, edges = analyze(d)
        got = {tuple(c) for c in cycles(nodes, edges)}
        assert got == {tuple(sorted(c)) for c in want_cycles}, (got, edges)
        assert all(e in edges for e in want_edges) and not any(e in edges for e in no_edges), edges

    c, a, b, m, x, y = "crate", "crate::a", "crate::b", "crate::m", "crate::m::x", "crate::m::y"
    base = {"lib.rs": "mod a;\nmod b;\npub use a::A;\n",
            "a.rs": "use crate::b::B;\npub struct A(B);\n",
            "b.rs": "pub struct B;\n// use crate::a::A;\n/// [crate::a::A]\n/* crate::a::A */\n"
                    "const S: &str = \"crate::a::A\";\nconst R: &str = r#\"crate::a::A\"#;\n"
                    "const C: char = '\"';\n#[cfg(test)]\nmod tests {\n    use crate::a::A;\n}\n"}
    check(base, [], [(a, b)], [(c, a), (b, a)])
    check({**base, "b.rs": "use std::fmt;\nuse crate::{\n    a::{self, A as Aa},\n};\npub struct B;\n"},
          [[a, b]], [(a, b), (b, a)])
    check({**base, "b.rs": "pub struct B;\nfn f() { let _ = crate::a::A(B); }\n"}, [[a, b]])
    # re-exports, crate::/super::/self::/super::super paths, private use seen by a child
    facade = {"lib.rs": "mod a;\nmod m;\npub use m::Y;\n", "a.rs": "pub fn f() { crate::Y::new(); }\n",
              "m/mod.rs": "mod x;\nmod y;\nuse y::Y;\nfn g() { self::x::h(); }\n",
              "m/x.rs": "use super::Y;\nuse super::super::a::f;\npub fn h() {}\n",
              "m/y.rs": "pub struct Y;\n"}
    check(facade, [], [(a, y), (x, y), (m, x), (m, y), (x, a)], [(a, m), (a, c), (x, m)])
    check({**facade, "m/y.rs": "pub struct Y;\nfn k() { super::x::h(); }\n"}, [[a, x, y]])
    check({**facade, "m/y.rs": "pub struct Y;\nuse crate::m::x::*;\n"}, [[a, x, y]])
    # a child using its parent's item, and the parent's code using the child: a cycle
    parent = {"lib.rs": "mod m;\n", "m/mod.rs": "mod x;\npub struct P;\nfn g() { x::h() }\n",
              "m/x.rs": "use super::P;\npub fn h() {}\n"}
    check(parent, [[m, x]])
    # a parent that only declares `mod x;` and re-exports from it: no edge to x
    check({**parent, "m/mod.rs": "mod x;\npub struct P;\npub use x::h;\npub(crate) use x::h as hh;\n"},
          [], [(x, m)], [(m, x)])
    # the allow list: a listed cycle (or a smaller one inside it) passes; a stale line fails
    nodes, edges = [a, b], {(a, b): "a.rs:1", (b, a): "b.rs:1"}
    with contextlib.redirect_stdout(io.StringIO()):
        assert report(nodes, edges, [frozenset([a, b, c])], c) == 1  # passes, but the line is stale
        assert report(nodes, edges, [frozenset([a, b])], c) == 0
        assert report(nodes, edges, [frozenset(["other::a", "other::b"])], c) == 1
        assert report(nodes, {}, [frozenset(["other::a", "other::b"])], c) == 0
    # layers: an import from a lower layer into a higher one fails, downward passes
    layers = [("low", [a]), ("high", [b, "crate::m"])]
    with contextlib.redirect_stdout(io.StringIO()):
        assert check_layers({(b, a): "b.rs:1"}, layers) == 0
        assert check_layers({(a, b): "a.rs:1"}, layers) == 1
        assert check_layers({(a, x): "a.rs:2"}, layers) == 1  # x is in m's layer
        assert check_layers({(a, x): "a.rs:2"}, layers + [("top", [x])]) == 1
        assert check_layers({(x, a): "x.rs:1", (c, b): "lib.rs:1"}, layers) == 0
    print("self-test: ok")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default="src", help="the crate's source folder (lib.rs or main.rs)")
    ap.add_argument("--crate-name", default="crate", help="name of the root module in the output")
    ap.add_argument("--allow", default=str(Path(__file__).with_name("cycles.allow")),
                    help="tolerated cycles, one per line (default: %(default)s, if present)")
    ap.add_argument("--layers", default=str(Path(__file__).with_name("layers.txt")),
                    help="layers, bottom first (default: %(default)s, if present)")
    ap.add_argument("--self-test", action="store_true", help="run the built-in tests")
    args = ap.parse_args()
    if args.self_test:
        return self_test()
    nodes, edges = analyze(args.root, args.crate_name)
    status = report(nodes, edges, read_allow(args.allow), args.crate_name)
    return status | check_layers(edges, read_layers(args.layers))


if __name__ == "__main__":
    sys.exit(main())
