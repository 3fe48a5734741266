#!/usr/bin/python3
"""check_docs.py: the docs against the repository.

1. docs/raf-opt.md's pass table against passes/passes.def: one row per
   registered pass, in registry order, each listing the pass's options
   (every `key` of its OPTS) and its order constraints exactly as the
   registry states them ("after `a`; before `b`, `c`; requires `d`").
2. Every option of a tool's flags.def (raf-opt/flags.def,
   raf-run/flags.def) is documented in its page (docs/raf-opt.md,
   docs/raf-run.md) as `--NAME`, and the page names no `--NAME`
   option that is neither a flag nor a pass.
3. Every reference to a .md file, in every file of the repository, names a
   file that exists: relative to the referring file's folder or to the
   repository's root (a link's #anchor is ignored).

Prints each problem and exits 1 if there is any.
usage: check_docs.py [--root DIR]
"""
import argparse
import os
import re
import sys

SKIP_DIRS = {".git", "Output", "__pycache__"}
# Verbatim copies of other projects' files: their .md references are to
# their own repositories.
SKIP_FILES = {os.path.join("raf-import", "onnx.proto"),
              # This file: its page names are templates.
              os.path.join("test", "docs", "check_docs.py")}


def registry(root):
    """The PASS rows of passes.def: (name, [option keys], after, before,
    requires)."""
    text = open(os.path.join(root, "passes", "passes.def")).read()
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    rows = []
    for m in re.finditer(r"PASS\((.*?)\)\s*(?=PASS\(|$)", text, flags=re.S):
        body = m.group(1)
        name = re.match(r"\s*\w+\s*,\s*\"([^\"]+)\"", body).group(1)
        keys = re.findall(r"A_\w+\(\"([^\"]+)\"", body)
        # The last four arguments: after, before, requires, mark.
        tail = re.search(r"\"([^\"]*)\"\s*,\s*\"([^\"]*)\"\s*,\s*"
                         r"\"([^\"]*)\"\s*,\s*"
                         r"(NOMARK|FUNC_ATTR\(\"[^\"]*\"\)|STMT_ATTR\(\"[^\"]*\"\))\s*$",
                         body.strip())
        if not tail:
            sys.exit("check_docs: cannot read the PASS row of %s" % name)
        rows.append((name, keys, tail.group(1), tail.group(2),
                     tail.group(3)))
    return rows


def order_text(after, before, requires):
    parts = []
    for word, lst in (("after", after), ("before", before),
                      ("requires", requires)):
        if lst:
            parts.append(word + " " + ", ".join("`%s`" % n for n in lst.split(",")))
    return "; ".join(parts)


def check_pass_table(root, problems):
    doc = os.path.join(root, "docs/raf-opt.md")
    table = []
    for line in open(doc):
        # Cells split at the bars that are not escaped (`a\|b`).
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        m = re.fullmatch(r"`([a-z-]+)`", cells[0]) if len(cells) >= 4 else None
        if m:
            table.append((m.group(1), cells[1], cells[2]))
    passes = registry(root)
    names = [p[0] for p in passes]
    if [t[0] for t in table] != names:
        problems.append("docs/raf-opt.md: the pass table lists %s; passes.def "
                        "registers %s, in that order" %
                        ([t[0] for t in table], names))
    rows = {t[0]: t for t in table}
    for name, keys, after, before, requires in passes:
        if name not in rows:
            continue
        _, options, order = rows[name]
        for k in keys:
            if not re.search(r"`%s(=|`)" % re.escape(k), options):
                problems.append("docs/raf-opt.md: pass %s: option %s is not in "
                                "its row" % (name, k))
        want = order_text(after, before, requires)
        if order != want:
            problems.append("docs/raf-opt.md: pass %s: the order column says "
                            "'%s'; passes.def says '%s'" % (name, order, want))


MD_REF = re.compile(r"(?<![\w/.-])([\w./-]*[\w-]\.md)(?:#[\w-]*)?\b")


# The pages that also document a script's options: the script.
SCRIPTS_IN_PAGE = {"raf-run": os.path.join("scripts", "plot-log.py")}


def check_flags(root, tool, problems):
    """The FLAG rows of TOOL/flags.def against docs/TOOL.md."""
    text = open(os.path.join(root, tool, "flags.def")).read()
    flags = re.findall(r'^FLAG\(\w+, "([\w-]+)"', text, re.M)
    doc_path = os.path.join(root, "docs", tool + ".md")
    doc = open(doc_path).read()
    passes = {row[0] for row in registry(root)}
    if tool in SCRIPTS_IN_PAGE:  # its options are the script's, not the tool's
        script = open(os.path.join(root, SCRIPTS_IN_PAGE[tool])).read()
        passes |= set(re.findall(r'"--([\w-]+)"', script))
    for f in flags:
        if not re.search(r"`--%s[`=/ ]" % re.escape(f), doc):
            problems.append("docs/%s.md: option --%s of %s/flags.def is not "
                            "documented" % (tool, f, tool))
    for f in sorted(set(re.findall(r"`--([a-z][\w-]*[a-z])`", doc) +
                        re.findall(r"`--([a-z][\w-]*[a-z])[=/ ]", doc))):
        if f not in flags and f not in passes:
            problems.append("docs/%s.md: documents --%s, which %s/flags.def "
                            "does not have" % (tool, f, tool))


def check_md_refs(root, problems):
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs
                         if d not in SKIP_DIRS and not d.startswith("build"))
        for f in sorted(files):
            path = os.path.join(folder, f)
            if os.path.relpath(path, root) in SKIP_FILES:
                continue
            try:
                text = open(path, encoding="utf-8").read()
            except (UnicodeDecodeError, OSError):
                continue
            for n, line in enumerate(text.splitlines(), 1):
                for m in MD_REF.finditer(line):
                    ref = m.group(1)
                    start = line.rfind(" ", 0, m.start()) + 1
                    if "://" in line[start:m.end()]:
                        continue  # a URL
                    here = os.path.normpath(os.path.join(folder, ref))
                    top = os.path.normpath(os.path.join(root, ref))
                    if not (os.path.isfile(here) or os.path.isfile(top)):
                        problems.append("%s:%d: refers to %s, which the "
                                        "repository does not have" %
                                        (os.path.relpath(path, root), n, ref))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", default=os.path.join(os.path.dirname(__file__),
                                                   "..", ".."))
    root = os.path.abspath(ap.parse_args().root)
    problems = []
    check_pass_table(root, problems)
    check_flags(root, "raf-opt", problems)
    check_flags(root, "raf-run", problems)
    check_md_refs(root, problems)
    for p in problems:
        print(p)
    if problems:
        return 1
    print("check_docs: the pass table matches passes.def; raf-opt's and "
          "raf-run's flags are documented; every .md reference resolves")
    return 0


if __name__ == "__main__":
    sys.exit(main())
