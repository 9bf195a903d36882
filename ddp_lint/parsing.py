"""How a program's text becomes a LibCST tree: at once (`parse`), or version after version of one
editor buffer (`Reparser`), where only the top-level statements whose text changed are parsed again.

An editor sends a whole new text for every keystroke, and LibCST has no incremental parser: a
3,000-line file took 0.18 s to parse and 0.09 s more for node positions on this project's machine,
most of the language server's latency budget, although a keystroke changes one function. Python's
own parser (0.02 s for the same file) tells where each top-level statement starts; the text from one
start to the next is a *chunk*, parsed on its own once and kept while its text stays the same. The
chunks' statements then make one `Module` equal to what `parse` gives for the whole text, with the
node positions of each chunk shifted to its first line.

LibCST gives blank lines and comments between two top-level statements to the second statement
(`leading_lines`); parsed alone, the first chunk keeps them as its module's `footer`, so they are
handed on. Where a file's layout could make the chunks disagree with the whole (an indentation or
newline style that differs from one chunk to another, a lone carriage return, a statement not in
column 0), the whole text is parsed instead. `tests/test_reparse.py` holds the two routes equal, tree
and positions, over the fixtures and generated layouts.
"""
from __future__ import annotations

import ast
import re
from typing import Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

import libcst as cst
from libcst.metadata import CodePosition, CodeRange

from .analysis.positions import Positions
from .documents.python import InputError
from .lines import line_ref
from .syntax import python_tree


def syntax_tree(text: str) -> ast.Module:
    """Python's own tree of the text; what its parser rejects is an input error in CPython's words.

    It goes before LibCST because it also rejects what would overflow LibCST's native parser (a
    1,500-deep bracket nesting or a 20,000-term sum kill the process with a segfault there; Python
    refuses nesting past 200 and trees past its recursion limit with an exception)."""
    try:
        return python_tree(text)  # the prefilter's tree of the same text, when it made one
    except SyntaxError as exc:
        raise InputError(f"syntax error at {line_ref(exc.lineno or 1)}, column {exc.offset or 1}: {exc.msg}",
                         exc.lineno or 1, exc.offset or 1, exc.msg) from None
    except (RecursionError, MemoryError):
        raise InputError("file too deeply nested to parse (Python's own parser refuses it)") from None
    except ValueError as exc:  # NUL bytes and the like
        raise InputError(f"cannot parse: {exc}") from None


def parse(text: str) -> cst.Module:
    """LibCST's tree of a program that Python's own parser accepts."""
    syntax_tree(text)
    return _libcst(text)


def _libcst(text: str) -> cst.Module:
    try:
        return cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        first = str(exc.message).splitlines()[0] if exc.message else "invalid syntax"
        raise InputError(f"syntax error at {line_ref(exc.raw_line)}, column {exc.raw_column + 1}: {first}",
                         exc.raw_line, exc.raw_column + 1, first) from None
    except (RecursionError, MemoryError):
        raise InputError("file too deeply nested to parse") from None


class _Chunk:
    """One top-level statement's text (with the blank lines and comments up to the next), parsed,
    with its node positions in its own lines (the first is 1)."""

    __slots__ = ("module", "indented", "points", "faithful")

    def __init__(self, text: str) -> None:
        self.module = _libcst(text)
        self.indented = any(_has_indented_block(statement) for statement in self.module.body)
        self.points = Positions(self.module)
        # LibCST does not give back every text it parsed: whitespace-only lines before the end of
        # a file can be lost. Cut there, the whole parse may differ, so such a chunk sends it there.
        self.faithful = self.points.code == text


def _has_indented_block(node: cst.CSTNode) -> bool:
    """Whether the node's text holds an INDENT token, from which LibCST takes a module's indent."""
    if isinstance(node, cst.IndentedBlock):
        return True
    if isinstance(node, (cst.BaseExpression, cst.BaseSmallStatement, cst.SimpleStatementLine)):
        return False  # no statement block can sit inside these
    return any(_has_indented_block(child) for child in node.children)


class ChunkPositions(Mapping[cst.CSTNode, CodeRange]):
    """Node positions in the whole text, from the positions of each chunk shifted to its first line."""

    def __init__(self, module: cst.Module, chunks: Sequence[Tuple[_Chunk, int]],
                 renamed: Dict[cst.CSTNode, cst.CSTNode], end: CodePosition) -> None:
        self._module = module
        self._chunks = chunks  # (chunk, its first line in the whole text)
        self._renamed = renamed  # top-level statement in the module -> the chunk's own (leading lines handed on)
        self._end = end
        self._last = 0

    def __getitem__(self, node: cst.CSTNode) -> CodeRange:
        if node is self._module:
            return CodeRange(CodePosition(1, 0), self._end)
        node = self._renamed.get(node, node)
        count = len(self._chunks)
        for step in range(count):  # where the last lookup was found first: lookups come in runs
            index = (self._last + step) % count
            chunk, first_line = self._chunks[index]
            points = chunk.points
            if node in points:
                self._last = index
                found = points[node]
                if first_line == 1:
                    return found
                shift = first_line - 1
                return CodeRange(CodePosition(found.start.line + shift, found.start.column),
                                 CodePosition(found.end.line + shift, found.end.column))
        raise KeyError(node)

    def __iter__(self) -> Iterator[cst.CSTNode]:
        yield self._module
        in_module = {original: node for node, original in self._renamed.items()}
        for chunk, _ in self._chunks:
            for node in chunk.points:
                if node is not chunk.module:
                    yield in_module.get(node, node)

    def __len__(self) -> int:
        return 1 + sum(len(chunk.points) - 1 for chunk, _ in self._chunks)


_LINE = re.compile(r"[^\n]*\n|[^\n]+")


class Reparser:
    """Parses successive versions of one program, reusing the chunks whose text did not change.

    Not thread-safe: one per buffer, used by one worker at a time. It keeps the chunks of the last
    version only, so its memory is about one tree."""

    def __init__(self) -> None:
        self._chunks: Dict[str, List[_Chunk]] = {}
        self._tree: Optional[Tuple[str, ast.Module]] = None
        self.reused = 0  # chunks taken from the last version in the last `parse`, for tests and benchmarks
        self.parsed = 0

    def syntax_tree(self, text: str) -> ast.Module:
        """`syntax_tree(text)`, kept for the next call with the same text (the prefilter's and the
        parse's)."""
        if self._tree is None or self._tree[0] != text:
            self._tree = (text, syntax_tree(text))
        return self._tree[1]

    def parse(self, text: str) -> Tuple[cst.Module, Mapping[cst.CSTNode, CodeRange]]:
        """The text's tree (equal to `parse(text)`) and its node positions."""
        tree = self.syntax_tree(text)
        self.reused = self.parsed = 0
        pieces = _pieces(text, tree)
        if pieces is None:
            self._chunks = {}
            module = _libcst(text)
            return module, Positions(module)
        chunks: List[Tuple[_Chunk, int]] = []
        # A text may repeat (two identical statements): each place gets its own chunk, since the
        # analysis tells nodes apart by identity.
        kept: Dict[str, List[_Chunk]] = {}
        try:
            for piece, first_line in pieces:
                before = self._chunks.get(piece)
                if before:
                    chunk = before.pop()
                    self.reused += 1
                else:
                    chunk = _Chunk(piece)
                    self.parsed += 1
                kept.setdefault(piece, []).append(chunk)
                chunks.append((chunk, first_line))
        except InputError:  # a piece LibCST refuses alone: the whole text decides, and words the error
            composed = None
        else:
            composed = _compose(text, [chunk for chunk, _ in chunks])
        if composed is None:  # or the chunks' layouts disagree
            self._chunks = {}
            module = _libcst(text)
            return module, Positions(module)
        self._chunks = kept
        module, renamed = composed
        return module, ChunkPositions(module, chunks, renamed, _end_of(pieces))


def _pieces(text: str, tree: ast.Module) -> Optional[List[Tuple[str, int]]]:
    """The text cut before each top-level statement's first line: (piece, its first line); None when
    cutting it is not safe."""
    if not tree.body or "\r" in text.replace("\r\n", ""):
        return None  # nothing to cut, or lone carriage returns (lines counted differently)
    starts: List[int] = []
    for statement in tree.body:
        if statement.col_offset != 0:
            return None  # a form feed before the statement, say
        first = min([statement.lineno] + [d.lineno for d in getattr(statement, "decorator_list", ())])
        if not starts or first > starts[-1]:
            starts.append(first)
    lines = _LINE.findall(text)
    starts[0] = 1  # comments and blank lines before the first statement are the module's header
    ends = starts[1:] + [len(lines) + 1]
    return [("".join(lines[start - 1:end - 1]), start) for start, end in zip(starts, ends)]


def _compose(text: str, chunks: Sequence[_Chunk]) -> Optional[Tuple[cst.Module, Dict[cst.CSTNode, cst.CSTNode]]]:
    first = chunks[0].module
    newline = first.default_newline
    indent = next((chunk.module.default_indent for chunk in chunks if chunk.indented), first.default_indent)
    body: List[cst.BaseStatement] = []
    renamed: Dict[cst.CSTNode, cst.CSTNode] = {}
    handed: Sequence[cst.EmptyLine] = ()
    for chunk in chunks:
        module = chunk.module
        if not chunk.faithful or (chunk.indented and module.default_indent != indent):
            return None
        if module.header and chunk is not chunks[0]:
            return None  # a chunk starts at its statement: nothing can come before it
        if module.default_newline != newline and ("\n" in text or "\r" in text):
            return None
        statements = list(module.body)
        if handed and statements:
            head = statements[0]
            statements[0] = head.with_changes(leading_lines=(*handed, *head.leading_lines))
            renamed[statements[0]] = head
            handed = ()
        body.extend(statements)
        handed = (*handed, *module.footer)
    composed = cst.Module(body=body, header=first.header, footer=handed, encoding=first.encoding,
                          default_indent=indent, default_newline=newline,
                          has_trailing_newline=chunks[-1].module.has_trailing_newline)
    return composed, renamed


def _end_of(pieces: Sequence[Tuple[str, int]]) -> CodePosition:
    """Where the whole module's range ends, as its codegen reaches it: after a last newline, which
    LibCST's codegen counts even where the text lacks it (and then leaves out of the code)."""
    last, first_line = pieces[-1]
    return CodePosition(first_line + last.count("\n") + (not last.endswith("\n")), 0)
