"""The Markdown parser of finished answers: GitHub-like, with a single newline kept as a line break.

A model writes poems, addresses and short step lists as lines. CommonMark joins such lines into one
paragraph, and so does Textual's default parser; chat apps keep them (markdown-it's ``breaks``).
Textual draws only hard breaks as new lines, so the soft breaks become hard ones here.
"""

from __future__ import annotations

from markdown_it import MarkdownIt
from markdown_it.rules_core import StateCore


def chat_markdown_parser() -> MarkdownIt:
    """A fresh parser (Textual's ``parser_factory``): "gfm-like" with every line break kept."""
    parser = MarkdownIt("gfm-like", {"breaks": True})
    parser.core.ruler.push("soft_breaks_kept", _keep_soft_breaks)
    return parser


def _keep_soft_breaks(state: StateCore) -> None:
    """Each newline inside a paragraph becomes a hard break (code blocks keep their text as it is)."""
    for token in state.tokens:
        for child in token.children or ():
            if child.type == "softbreak":
                child.type, child.tag = "hardbreak", "br"
