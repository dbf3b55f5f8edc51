#!/usr/bin/env python3
"""Checks that the Markdown pages read the same in a plain Markdown viewer and on the Doxygen site.

    check_pages.py REPO_ROOT             check every page; exit 1 with one line per problem
    check_pages.py REPO_ROOT --update    rewrite each copied code block from its source first
    check_pages.py --self-test           show that every rule catches a page that breaks it

The pages are the Markdown files Doxygen reads (docs/CMakeLists.txt): README.md and every *.md
under docs/pages, lessons, exercises, common and kernels. A page must not contain

  - a Doxygen command outside code (\\snippet, \\ref, \\page, {#anchor} ...): a Markdown viewer
    such as GitHub prints it as text;
  - a link or image whose path does not exist relative to the page (both renderers resolve a
    relative path from the page's own folder; Doxygen finds images through IMAGE_PATH);
  - a link to an in-page anchor (#...): Doxygen 1.9 names headings autotoc_mdN, GitHub names them
    after their text, so no anchor works in both; link the page file instead;
  - a closing ' inside a single-backtick code span (Doxygen 1.9 reads `...' as quotes);
  - a `code span` inside straight double quotes (Doxygen 1.9 prints its backticks);
  - a blank line inside <details> (Doxygen 1.9 ends the block there, GitHub does not);
  - two images with the same file name (Doxygen copies images flat into html/);
  - a ```python block that does not compile (the snippets a learner pastes);
  - a code block copied from a source file that differs from that file now. Such a block follows
    a line `<!-- snippet: FILE NAME -->` and holds exactly the lines between the two `//! [NAME]`
    markers of FILE (the markers `vramlab verify` already requires).

Every snippet a lesson's manifest.json lists must appear on its exercises page.
"""
import json
import re
import sys
import tempfile
from pathlib import Path

PAGE_DIRS = ["docs/pages", "docs/design", "lessons", "exercises", "common", "kernels"]
EXCLUDED_PARTS = {"tests", "examples", "detail", "hints"}  # Doxyfile.in EXCLUDE_PATTERNS
DOXYGEN_COMMAND = re.compile(
    r"(?<![\w\\])[\\@](snippet\w*|ref|page|subpage|mainpage|section|subsection|subsubsection|"
    r"paragraph|anchor|image|include\w*|dontinclude|copydoc|brief|code|endcode|verbatim|"
    r"endverbatim|htmlonly|endhtmlonly|cite|defgroup|ingroup|addtogroup|tableofcontents)\b")
HEADING_ID = re.compile(r"\{#[\w-]*\}")
MARKDOWN_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HTML_LINK = re.compile(r"\b(?:src|href)\s*=\s*\"([^\"]+)\"")
SNIPPET_MARK = re.compile(r"^<!--\s*snippet:\s*(\S+)\s+(\S+)\s*-->\s*$")
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})")
CODE_SPAN = re.compile(r"(`+)(.+?)(?<!`)\1(?!`)")
QUOTED_CODE = re.compile(r'"[^"`]*`[^`"]+`[^"`]*"')
URL_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def find_pages(root):
    pages = [root / "README.md"] if (root / "README.md").is_file() else []
    for folder in PAGE_DIRS:
        for path in sorted((root / folder).rglob("*.md")):
            if not EXCLUDED_PARTS.intersection(path.relative_to(root).parts):
                pages.append(path)
    return pages


def region(source, name):
    """The lines between the two `//! [name]` markers of source, or an error message."""
    if not source.is_file():
        return None, f"snippet source {source} does not exist"
    lines = source.read_text(encoding="utf-8").splitlines()
    marks = [i for i, line in enumerate(lines) if line.strip() == f"//! [{name}]"]
    if len(marks) != 2:
        return None, f"{source} has {len(marks)} '//! [{name}]' markers, needs 2"
    return lines[marks[0] + 1:marks[1]], None


def strip_inline_code(line):
    return re.sub(r"(`+)(?:(?!\1).)+?\1", "", line)


def check_page(root, page, update):
    """Returns (problems, snippets named on the page, the page's text after an update)."""
    problems, snippets = [], set()
    where = page.relative_to(root)
    lines = page.read_text(encoding="utf-8").splitlines()
    out = []
    i, prev_blank, in_indented = 0, True, False
    while i < len(lines):
        line = lines[i]
        mark = SNIPPET_MARK.match(line)
        fence = FENCE.match(line)
        if mark:
            out.append(line)
            file, name = mark.group(1), mark.group(2)
            snippets.add((file, name))
            opening = FENCE.match(lines[i + 1]) if i + 1 < len(lines) else None
            if not opening:
                problems.append(f"{where}:{i + 1}: snippet {file} [{name}] is not followed by a code fence")
                i += 1
                continue
            end = i + 2
            while end < len(lines) and not lines[end].strip().startswith(opening.group(2)):
                end += 1
            block = lines[i + 2:end]
            expected, error = region(root / file, name)
            if error:
                problems.append(f"{where}:{i + 1}: {error}")
            elif block != expected:
                if update:
                    block = expected
                else:
                    first = next((k for k, (a, b) in enumerate(zip(block, expected)) if a != b),
                                 min(len(block), len(expected)))
                    problems.append(f"{where}:{i + 3 + first}: the code block differs from {file} "
                                    f"[{name}] (page line {first + 1} of the block; rerun with --update)")
            out.append(lines[i + 1])
            out.extend(block)
            out.extend(lines[end:end + 1])
            i, prev_blank, in_indented = end + 1, False, False
            continue
        if fence:
            end = i + 1
            while end < len(lines) and not lines[end].strip().startswith(fence.group(2)):
                end += 1
            if line.strip()[len(fence.group(2)):].strip() == "python":
                try:
                    compile("\n".join(lines[i + 1:end]) + "\n", f"{where}:{i + 2}", "exec")
                except SyntaxError as error:
                    problems.append(f"{where}:{i + 1 + (error.lineno or 1)}: the python block does "
                                    f"not compile: {error.msg}")
            out.extend(lines[i:end + 1])
            i, prev_blank, in_indented = end + 1, False, False
            continue
        if "<details>" in line and "</details>" not in line:
            end = i + 1
            while end < len(lines) and "</details>" not in lines[end]:
                if not lines[end].strip():
                    problems.append(f"{where}:{end + 1}: blank line inside <details>: Doxygen 1.9 "
                                    "closes the block there (keep the hint one paragraph, code outside)")
                    break
                end += 1
        in_indented = (line.startswith("    ") or line.startswith("\t")) and (prev_blank or in_indented)
        if not in_indented:
            text = strip_inline_code(line)
            for command in DOXYGEN_COMMAND.finditer(text):
                problems.append(f"{where}:{i + 1}: Doxygen command '{command.group(0)}' shows as text "
                                "in a Markdown viewer")
            if HEADING_ID.search(text):
                problems.append(f"{where}:{i + 1}: '{HEADING_ID.search(text).group(0)}' shows as text "
                                "in a Markdown viewer; Doxygen names the page after its file")
            if any(len(m.group(1)) == 1 and re.search(r"'(?![A-Za-z0-9])", m.group(2))
                   for m in CODE_SPAN.finditer(line)):
                problems.append(f"{where}:{i + 1}: a closing quote ' inside a `code span` makes Doxygen 1.9 "
                                "print `...' as quotes; write the span with double backticks")
            if QUOTED_CODE.search(line):
                problems.append(f"{where}:{i + 1}: a `code span` inside straight double quotes shows "
                                "its backticks on the Doxygen site (1.9 reads \"...\" as a string); "
                                "use “ ” or move the code out")
            for target in MARKDOWN_LINK.findall(text) + HTML_LINK.findall(text):
                problem = check_link(root, page, target)
                if problem:
                    problems.append(f"{where}:{i + 1}: {problem}")
        out.append(line)
        prev_blank = not line.strip()
        i += 1
    return problems, snippets, "\n".join(out) + "\n"


def check_link(root, page, target):
    if URL_SCHEME.match(target):
        return None
    if target.startswith("#"):
        return (f"in-page anchor '{target}': Doxygen and GitHub name headings differently; "
                "link the page file or name the section in words")
    path = target.split("#", 1)[0]
    if path.startswith("/"):
        return f"absolute path '{target}': write it relative to the page"
    resolved = (page.parent / path).resolve()
    if not resolved.exists():
        return f"'{target}' does not exist relative to the page ({resolved})"
    if root.resolve() not in resolved.parents and resolved != root.resolve():
        return f"'{target}' leaves the repository"
    return None


def manifest_problems(root, snippets_by_page):
    problems = []
    for manifest in sorted((root / "lessons").glob("*/manifest.json")):
        lesson = json.loads(manifest.read_text(encoding="utf-8"))
        page = lesson.get("exercises_page")
        if not page:
            continue
        on_page = snippets_by_page.get(root / page, set())
        for exercise in lesson.get("exercises", []):
            for snippet in exercise.get("snippets", []):
                if (snippet["file"], snippet["name"]) not in on_page:
                    problems.append(f"{page}: exercise {exercise['id']}'s snippet {snippet['file']} "
                                    f"[{snippet['name']}] (listed in {manifest.relative_to(root)}) is not on the page")
    return problems


IMAGE = re.compile(r"!\[[^\]]*\]\(\s*<?([^)\s>]+)")


def image_name_problems(root, pages):
    """Doxygen copies every image flat into html/, so two different images may not share a name."""
    by_name, problems = {}, []
    for page in pages:
        for target in IMAGE.findall(page.read_text(encoding="utf-8")):
            if URL_SCHEME.match(target):
                continue
            resolved = (page.parent / target).resolve()
            other = by_name.setdefault(resolved.name, resolved)
            if other != resolved:
                problems.append(f"{page.relative_to(root)}: image {target} has the file name of "
                                f"{other.relative_to(root.resolve())}; Doxygen's html/ holds one of them")
    return problems


def check(root, update=False, verbose=True):
    problems, snippets_by_page = image_name_problems(root, find_pages(root)), {}
    for page in find_pages(root):
        page_problems, snippets, text = check_page(root, page, update)
        if update and text != page.read_text(encoding="utf-8"):
            page.write_text(text, encoding="utf-8")
            if verbose:
                print(f"updated {page.relative_to(root)}")
        problems += page_problems
        snippets_by_page[page] = snippets
    return problems + manifest_problems(root, snippets_by_page)


def self_test():
    """Every rule must reject a page that breaks it, and accept the same page fixed."""
    good = ("# Title\n\nSee [the other page](other.md) and ![a figure](figures/a.svg).\n\n"
            "<!-- snippet: src/a.cpp body -->\n```cpp\n  return 1;\n```\n\n"
            "`\\ref inside code` is fine.\n\n```\n\\snippet in a fence is fine\n```\n\n"
            "```python\nimport torch\nprint(torch.cuda.memory_allocated())\n```\n\n"
            "<details><summary>Hint</summary>\none paragraph\n</details>\n")
    broken = {
        "raw \\snippet": good + "\n\\snippet src/a.cpp body\n",
        "@ref": good + "\nSee [x](@ref other).\n",
        "heading id": good.replace("# Title", "# Title {#title}"),
        "missing image": good.replace("figures/a.svg", "lessons/figures/a.svg"),
        "missing page": good.replace("other.md", "missing.md"),
        "in-page anchor": good + "\nSee [below](#title).\n",
        "html image": good + '\n<img src="figures/b.svg">\n',
        "stale snippet": good.replace("  return 1;\n```", "  return 2;\n```"),
        "unknown marker": good.replace("src/a.cpp body", "src/a.cpp stub"),
        "unfenced snippet": good.replace("```cpp\n", ""),
        "manifest snippet missing": good.replace("<!-- snippet: src/a.cpp body -->\n", ""),
        "blank line in details": good + "\n<details><summary>Hint</summary>\none\n\ntwo\n</details>\n",
        "two images named a.svg": good + "\n![another](other/a.svg)\n",
        "code span in straight quotes": good + '\nThe tutorial says "Can be `$100$` GB".\n',
        "apostrophe in a code span": good + "\nIt prints `unknown exercise '01.9'` and stops.\n",
        "python that does not compile": good + "\n```python\nprint(torch.cuda.memory_allocated(()\n```\n",
    }
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "src").mkdir()
        (root / "src/a.cpp").write_text("int f() {\n//! [body]\n  return 1;\n//! [body]\n}\n", encoding="utf-8")
        lesson = root / "lessons/01-x"
        (lesson / "figures").mkdir(parents=True)
        (lesson / "figures/a.svg").write_text("<svg/>", encoding="utf-8")
        (lesson / "other").mkdir()
        (lesson / "other/a.svg").write_text("<svg/>", encoding="utf-8")
        (lesson / "other.md").write_text("# Other\n", encoding="utf-8")
        (lesson / "manifest.json").write_text(json.dumps({
            "exercises_page": "lessons/01-x/README.md",
            "exercises": [{"id": "01.1", "snippets": [{"file": "src/a.cpp", "name": "body"}]}]}),
            encoding="utf-8")
        page = lesson / "README.md"
        page.write_text(good, encoding="utf-8")
        if check(root):
            failures.append(f"the good page was rejected: {check(root)}")
        for rule, text in broken.items():
            page.write_text(text, encoding="utf-8")
            if not check(root):
                failures.append(f"not caught: {rule}")
        page.write_text(broken["stale snippet"], encoding="utf-8")
        check(root, update=True, verbose=False)
        if page.read_text(encoding="utf-8") != good or check(root):
            failures.append("--update did not restore the snippet from its source")
    for failure in failures:
        print("FAIL:", failure)
    print("self-test:", "FAILED" if failures else f"OK, {len(broken)} broken pages caught")
    return 1 if failures else 0


def main():
    args = sys.argv[1:]
    if args == ["--self-test"]:
        return self_test()
    if not args or len(args) > 2 or (len(args) == 2 and args[1] != "--update"):
        print(__doc__)
        return 2
    root = Path(args[0]).resolve()
    problems = check(root, update=len(args) == 2)
    for problem in problems:
        print(problem)
    pages = len(find_pages(root))
    print(f"{pages} pages, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
