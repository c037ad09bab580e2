# bash completion for amptrace and ampview: subcommands, each command's
# options (read from its own --help, so they never go stale), files, and
# for check the rule keywords and finding kinds (from `amptrace help
# rules`).  Installed by meson into share/bash-completion/completions;
# from any install: eval "$(amptrace completion bash)".

_amptrace_options() { # COMMAND... : the options its --help names
	"$@" --help 2>/dev/null |
		grep -oE '(^|[[:space:],[])--?[A-Za-z][-A-Za-z0-9]*' |
		tr -d ' ,[' | sort -u
}

_amptrace_rule_words() { # the keywords of RULES.md's grammar, and the kinds
	local prog=$1
	echo op casts cache scaler ops no finding findings total count output \
		inputs policy per step in scope phase on under outside autocast \
		for to from hit miss uncacheable disabled any hit-rate hits \
		misses clears skipped-steps steps scale-min scale-max \
		scale-final forward backward optimizer cpu cuda f64 f32 f16 \
		bf16 i64 i32 bool none lower_precision_fp fp32 \
		fp32_set_opt_dtype fp32_append_dtype promote banned
	"$prog" help rules 2>/dev/null | sed -n 's/^finding kinds: //p'
}

_amptrace() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
	local prog=${COMP_WORDS[0]} command=${COMP_WORDS[1]} i
	COMPREPLY=()
	if [ "$COMP_CWORD" -eq 1 ]; then
		local commands
		commands=$("$prog" help 2>/dev/null |
			awk '/^commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 }')
		COMPREPLY=($(compgen -W "$commands help completion --help --version" -- "$cur"))
		return
	fi
	# amptrace run ... -- PROG ARGS: complete as that command line
	if [ "$command" = run ]; then
		for ((i = 2; i < COMP_CWORD; i++)); do
			if [ "${COMP_WORDS[i]}" = -- ]; then
				if declare -F _command_offset >/dev/null; then
					_command_offset $((i + 1))
				else
					COMPREPLY=($(compgen -c -- "$cur"))
				fi
				return
			fi
		done
	fi
	case $command in
	help)
		local commands
		commands=$("$prog" help 2>/dev/null |
			awk '/^commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 }')
		COMPREPLY=($(compgen -W "$commands rules" -- "$cur"))
		return ;;
	completion)
		COMPREPLY=($(compgen -W "bash" -- "$cur"))
		return ;;
	esac
	case $prev in
	-o | --output | --svg | --report | --junit | --raw-dir)
		COMPREPLY=($(compgen -f -- "$cur"))
		return ;;
	--device) COMPREPLY=($(compgen -W "cpu cuda" -- "$cur")); return ;;
	--dtype) COMPREPLY=($(compgen -W "f16 bf16" -- "$cur")); return ;;
	--torch) # the versions explain's --help lists
		COMPREPLY=($(compgen -W "$("$prog" explain --help 2>/dev/null |
			sed -n 's/.*--torch VERSION .*: \(.*\) (default newest);.*/\1/p' |
			tr -d ,) newest" -- "$cur"))
		return ;;
	--color) COMPREPLY=($(compgen -W "auto always never" -- "$cur")); return ;;
	--steps) COMPREPLY=($(compgen -W "0:19 all none every:" -- "$cur")); return ;;
	--max-size) COMPREPLY=($(compgen -W "100M 1G none" -- "$cur")); return ;;
	esac
	# a rule typed inline, quoted (check reads them from a file: this is
	# for `<(echo '...')` and here-strings): the keyword being typed
	if [ "$command" = check ] && [[ $cur == [\"\']* ]]; then
		local head=${cur:0:1} last=${cur:1}
		if [[ $cur == *" "* ]]; then
			head=${cur% *}" " last=${cur##* }
		fi
		mapfile -t COMPREPLY < <(compgen -P "$head" \
			-W "$(_amptrace_rule_words "$prog")" -- "$last")
		return
	fi
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$(_amptrace_options "$prog" "$command")" -- "$cur"))
		return
	fi
	case $command in
	explain)
		COMPREPLY=($(compgen -W "f64 f32 f16 bf16 i64 i32 bool" -- "$cur")) ;;
	*)
		COMPREPLY=($(compgen -f -- "$cur")) ;;
	esac
}

_ampview() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
	COMPREPLY=()
	case $prev in
	-o | --output) COMPREPLY=($(compgen -f -- "$cur")); return ;;
	--format) COMPREPLY=($(compgen -W "svg dot png" -- "$cur")); return ;;
	--phase) COMPREPLY=($(compgen -W "forward backward optimizer other" -- "$cur")); return ;;
	esac
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$(_amptrace_options "${COMP_WORDS[0]}")" -- "$cur"))
	else
		COMPREPLY=($(compgen -f -- "$cur"))
	fi
}

complete -o filenames -F _amptrace amptrace
complete -o filenames -F _ampview ampview
