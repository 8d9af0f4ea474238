_mcp_completion() {
    local IFS=$'\n'
    local response

    response=$(env COMP_WORDS="${COMP_WORDS[*]}" COMP_CWORD=$COMP_CWORD \
        COMP_LINE="${COMP_LINE:0:COMP_POINT}" COMP_WORDBREAKS="$COMP_WORDBREAKS" \
        _MCP_COMPLETE=bash_complete $1)

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

_mcp_completion_setup() {
    complete -o nosort -F _mcp_completion mcp
}

_mcp_completion_setup;
