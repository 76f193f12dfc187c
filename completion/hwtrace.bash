# SPDX-License-Identifier: BSD-2-Clause
# bash completion for hwtrace and hwt-server (installed as
# share/bash-completion/completions/hwtrace and .../hwt-server).

_hwtrace()
{
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
	local cmd=${COMP_WORDS[1]} opts

	if [ "$COMP_CWORD" -eq 1 ]; then
		COMPREPLY=($(compgen -W "record dump info index export writes backends --help --version" -- "$cur"))
		return
	fi
	case $prev in
	-b|--backend)
		COMPREPLY=($(compgen -W "$(hwtrace backends 2>/dev/null | cut -d' ' -f1) pt bts etm" -- "$cur"))
		return ;;
	-o|--output)
		COMPREPLY=($(compgen -f -- "$cur"))
		return ;;
	-s|--size|-c|--cpu|-t|--thread|-r|--range|-l|--last|--since|--cpus|--slice)
		return ;;
	esac
	case $cmd in
	record)
		# After --, the program and its arguments.
		for w in "${COMP_WORDS[@]:1:COMP_CWORD-1}"; do
			if [ "$w" = -- ]; then
				COMPREPLY=($(compgen -c -f -- "$cur"))
				return
			fi
		done
		opts="--output --backend --size --cpu --no-pin --no-copy --snapshot --whole --values --follow-fork --block-step --quiet --help --" ;;
	dump) opts="--insn --calls --ranges --thread --range --last --since --tsv --help" ;;
	info) opts="--help" ;;
	index) opts="--help" ;;
	writes) opts="--last --tsv --help" ;;
	export) opts="--lldb --chrome --svg --per-cpu --cpus --slice --output --range --last --since --help" ;;
	*) return ;;
	esac
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$opts" -- "$cur"))
	else
		# Bundles are directories (or their trace.json).
		COMPREPLY=($(compgen -d -- "$cur") $(compgen -f -X '!*.json' -- "$cur"))
	fi
}

_hwt_server()
{
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}

	for w in "${COMP_WORDS[@]:1:COMP_CWORD-1}"; do
		if [ "$w" = -- ]; then
			COMPREPLY=($(compgen -c -f -- "$cur"))
			return
		fi
	done
	case $prev in
	--bundle) COMPREPLY=($(compgen -d -- "$cur")); return ;;
	--core) COMPREPLY=($(compgen -f -- "$cur")); return ;;
	--backend)
		COMPREPLY=($(compgen -W "$(hwtrace backends 2>/dev/null | cut -d' ' -f1)" -- "$cur"))
		return ;;
	--attach) COMPREPLY=($(compgen -W "$(ps -eo pid= 2>/dev/null)" -- "$cur")); return ;;
	--listen) return ;;
	esac
	COMPREPLY=($(compgen -W "--listen --allow-remote --once --backend --record --values --attach --bundle --core --help --version --" -- "$cur"))
}

complete -F _hwtrace hwtrace
complete -F _hwt_server hwt-server
