"""Bash completion that keeps `--arg name=value` (and URLs, `Name:value` headers) whole.

A module of its own, light and importing nothing of the CLI: `_root` imports it when
the shell asks for completions (registering the class), and `shell_completion` when it
prints the script.
"""

from __future__ import annotations

import os

from click.shell_completion import (
    BashComplete,
    CompletionItem,
    add_completion_class,
    split_arg_string,
)

__all__ = ["WordBreakBashComplete"]

# bash's default COMP_WORDBREAKS; the script passes the user's own.
DEFAULT_WORDBREAKS = "\"'@><=;|&(:"
# Break characters readline keeps in the word it replaces (bash's rl_special_prefixes):
# after `@e` the text replaced is `@e`, not `e`.
SPECIAL_PREFIXES = "$@"

# click's bash script, but it also hands over the line up to the cursor and the
# word-break characters, so `--arg name=va` reaches us as one word.
_SOURCE_BASH = """\
%(complete_func)s() {
    local IFS=$'\\n'
    local response

    response=$(env COMP_WORDS="${COMP_WORDS[*]}" COMP_CWORD=$COMP_CWORD \\
        COMP_LINE="${COMP_LINE:0:COMP_POINT}" COMP_WORDBREAKS="$COMP_WORDBREAKS" \\
        %(complete_var)s=bash_complete $1)

    for completion in $response; do
        IFS=',' read type value <<< "$completion"

        if [[ $type == 'dir' ]]; then
            COMPREPLY=()
            compopt -o dirnames
        elif [[ $type == 'file' ]]; then
            COMPREPLY=()
            compopt -o default
        elif [[ $type == 'plain' ]]; then
            COMPREPLY+=($value)
        fi
    done

    return 0
}

%(complete_func)s_setup() {
    complete -o nosort -F %(complete_func)s %(prog_name)s
}

%(complete_func)s_setup;
"""


class WordBreakBashComplete(BashComplete):
    """bash completion that sees words as the command will, not as bash splits them.

    bash cuts COMP_WORDS at every COMP_WORDBREAKS character (`=`, `:`), so click's
    stock script hands `--arg mode=fa` over as `mode`, `=`, `fa` and a URL as
    `https`, `:`, `//host/...`: the incomplete word and the arguments before it
    are wrong. We split the line up to the cursor (COMP_LINE) ourselves, and since
    bash then replaces only the text after the word's last break character (from
    that character on when it is `@` or `$`), we drop that much from the front of
    each candidate.
    """

    source_template = _SOURCE_BASH

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._strip = ""

    def get_completion_args(self) -> tuple[list[str], str]:
        line = os.environ.get("COMP_LINE")
        if not line:  # an older script, or a caller that sets COMP_WORDS only
            return super().get_completion_args()
        # A sentinel so a trailing space (a new, empty word) and an open quote
        # are both told apart from the last complete word.
        words = split_arg_string(line + "\x00")
        incomplete = words[-1][:-1] if words and words[-1].endswith("\x00") else ""
        raw = line.rsplit(None, 1)[-1] if line and not line[-1].isspace() else ""
        breaks = os.environ.get("COMP_WORDBREAKS", DEFAULT_WORDBREAKS)
        if not any(ch in raw for ch in "'\"\\"):  # quoted or escaped: readline's own rules, leave it be
            cut = max((incomplete.rfind(ch) for ch in breaks if ch not in "'\""), default=-1)
            kept = cut >= 0 and incomplete[cut] in SPECIAL_PREFIXES
            self._strip = incomplete[:cut] if kept else incomplete[:cut + 1]
        return words[1:-1], incomplete

    def format_completion(self, item: CompletionItem) -> str:
        value = str(item.value)
        if self._strip and value.startswith(self._strip):
            value = value[len(self._strip):]
        return f"{item.type},{value}"


add_completion_class(WordBreakBashComplete)
