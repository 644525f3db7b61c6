#!/usr/bin/env bash
# The bash completions of vsharectl and vshare-run, sourced into a plain
# bash (no bash-completion package needed) and driven the way bash drives
# them: COMP_WORDS and COMP_CWORD set, the function called, COMPREPLY read.
# The option and command lists are checked against each program's --help.
# Usage: test_completion.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
dir=$src/packaging/bash-completion
ctl=$build/bin/vsharectl
run=$build/bin/vshare-run
fails=0

fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

# complete FUNCTION WORD... : the candidates for the last word, sorted,
# one a line.
complete_words() {
	local fn=$1; shift
	COMP_WORDS=("$@")
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	COMPREPLY=()
	"$fn"
	printf '%s\n' "${COMPREPLY[@]}" | sort
}

expect() { # FUNCTION "want words" WORD...
	local fn=$1 want=$2; shift 2
	local got
	got=$(complete_words "$fn" "$@" | tr '\n' ' ')
	got=${got% }
	[[ $got == "$want" ]] || fail "'$*<TAB>': got '$got', want '$want'"
}

contains() { # FUNCTION word WORD...
	local fn=$1 word=$2; shift 2
	complete_words "$fn" "$@" | grep -x -- "$word" >/dev/null ||
		fail "'$*<TAB>' does not offer $word"
}

# shellcheck source=/dev/null
. "$dir/vsharectl"
# shellcheck source=/dev/null
. "$dir/vshare-run"
complete -p vsharectl >/dev/null || fail "vsharectl: no complete -F"
complete -p vshare-run >/dev/null || fail "vshare-run: no complete -F"

# vsharectl: commands read from the built program's --help, and the same
# list when the program cannot be run.
all="auto bytes cdi check disable enable label metrics name policy set-slice set-tq set-weight status"
expect _vsharectl "$all" "$ctl" ""
expect _vsharectl "set-slice set-tq set-weight status" "$ctl" s
expect _vsharectl "$all" /nonexistent/vsharectl ""
expect _vsharectl "generate" "$ctl" cdi ""
expect _vsharectl "--no-framework-defaults" "$ctl" cdi generate --no
expect _vsharectl "--mandatory" "$ctl" cdi generate --man
contains _vsharectl "--output" "$ctl" cdi generate -
expect _vsharectl "set-slice set-tq set-weight status" "$ctl" --json s
expect _vsharectl "fair fcfs" "$ctl" policy ""
expect _vsharectl "" "$ctl" policy fair ""
contains _vsharectl root "$ctl" set-weight ro
expect _vsharectl "" "$ctl" set-weight root ""
expect _vsharectl "" "$ctl" policy --g
expect _vsharectl "--gpu" "$ctl" set-slice 100 --g
expect _vsharectl "status" "$ctl" --socket /tmp/s.sock st
expect _vsharectl "--json" "$ctl" --js
expect _vsharectl "--gpu" "$ctl" enable --g
expect _vsharectl "" "$ctl" status --g
expect _vsharectl "" "$ctl" metrics --g
expect _vsharectl "metrics" "$ctl" me
expect _vsharectl "--wide" "$ctl" status --w
expect _vsharectl "--wide" "$ctl" --w
expect _vsharectl "" "$ctl" enable --w
expect _vsharectl "" "$ctl" set-tq ""
expect _vsharectl "" "$ctl" status ""
expect _vsharectl "--jupyter-kernel" "$ctl" label --j
expect _vsharectl "" "$ctl" label --jupyter-kernel k --
expect _vsharectl "" "$ctl" label --js
contains _vsharectl "$dir/vsharectl" "$ctl" --socket "$dir/vsh"
# The global options (those of one command, such as name's --prefix, are
# that command's own).
for opt in $("$ctl" --help | sed -n '/^options:/,$p' |
	grep -o -- '--[a-z][a-z-]*' | sort -u); do
	case $opt in
	--wide) contains _vsharectl "$opt" "$ctl" status - ;; # status alone
	*) contains _vsharectl "$opt" "$ctl" enable - ;;
	esac
done
while read -r cmd; do
	contains _vsharectl "$cmd" "$ctl" ""
done < <(sed -n '/^commands:/,/^[^ ]/s/^  \([a-z][a-z-]*\).*/\1/p' <("$ctl" --help))

# vshare-run: options, their values, then the command's words.
expect _vshare_run "eager lazy" vshare-run --swap-out ""
expect _vshare_run "debug" vshare-run --log-level d
expect _vshare_run "--no-convert" vshare-run --no-c
expect _vshare_run "--mem-limit" vshare-run --label x --mem
expect _vshare_run "" vshare-run --mem-limit ""
expect _vshare_run "--jupyter-kernel" vshare-run --jup
expect _vshare_run "" vshare-run --jupyter-kernel ""
contains _vshare_run ls vshare-run --jupyter-kernel k l
expect _vshare_run "--system" vshare-run --install-kernel --sy
contains _vshare_run "$dir/vshare-run" vshare-run --lib "$dir/vshare-r"
contains _vshare_run ls vshare-run -- ls
contains _vshare_run ls vshare-run --label x l
contains _vshare_run "$dir/vshare-run" vshare-run -- ls "$dir/vshare-r"
for opt in $("$run" --help | grep -o -- '--[a-z][a-z-]*' | sort -u); do
	contains _vshare_run "$opt" vshare-run -
done

[[ $fails == 0 ]] || { echo "$fails failures" >&2; exit 1; }
echo "ok: bash completion of vsharectl and vshare-run"
