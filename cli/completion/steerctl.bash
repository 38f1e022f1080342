# bash completion for steerctl(1)                          -*- shell-script -*-
# SPDX-License-Identifier: MIT
#
# Verbs, modes, policies and options; for opt-in, opt-out, explain and
# trial the cgroups that the running steerd has opted in (steerctl list),
# for opt-in also the cgroup directories of this host, and for trial --show
# the kept trials' IDs (steerctl trials). Installed as
# share/bash-completion/completions/steerctl; works with or without the
# bash-completion package's helpers.

# The steerctl that is being completed (./build/steerctl too), else the one
# on PATH.
_steerctl_binary() {
        local c=${COMP_WORDS[0]}
        if [[ $c == */* && -x $c && ! -d $c ]]; then
                printf '%s\n' "$c"
        else
                type -P steerctl
        fi
}

# The opted-in cgroups of the running steerd, one per line; nothing, quietly,
# when steerd or the bus is not there. steerd is asked only when it owns its
# name, so that pressing Tab never starts it through D-Bus activation.
_steerctl_opted_in() {
        local ctl owner
        ctl=$(_steerctl_binary) || return 0
        if type -P busctl >/dev/null; then
                owner=$(timeout 2 busctl call --system org.freedesktop.DBus /org/freedesktop/DBus \
                        org.freedesktop.DBus NameHasOwner s org.steerd1 2>/dev/null) || return 0
                [[ $owner == "b true" ]] || return 0
        fi
        # The first column of the table; every row is one cgroup.
        timeout 2 "$ctl" list --no-legend --json=off 2>/dev/null | while read -r name _; do
                [[ $name == /* ]] && printf '%s\n' "$name"
        done
}

# The IDs of the kept trials, one per line; quietly nothing without steerd,
# which is asked only when it owns its name, as above.
_steerctl_trial_ids() {
        local ctl owner
        ctl=$(_steerctl_binary) || return 0
        if type -P busctl >/dev/null; then
                owner=$(timeout 2 busctl call --system org.freedesktop.DBus /org/freedesktop/DBus \
                        org.freedesktop.DBus NameHasOwner s org.steerd1 2>/dev/null) || return 0
                [[ $owner == "b true" ]] || return 0
        fi
        # The first column of the table; every row is one trial.
        timeout 2 "$ctl" trials --no-legend --json=off 2>/dev/null | while read -r id _; do
                [[ -n $id ]] && printf '%s\n' "$id"
        done
}

# Cgroup paths under the cgroup2 and the cpuset v1 mounts (what steerd
# resolves a path against) that start with $1, or directories when $1 is an
# absolute directory (/sys/...).
_steerctl_cgroup_paths() {
        local cur=$1 mnt type opts rest d
        local -a mounts=()
        while read -r _ mnt type opts rest; do
                case $type in
                cgroup2) mounts+=("$mnt") ;;
                cgroup) [[ ,$opts, == *,cpuset,* ]] && mounts+=("$mnt") ;;
                esac
        done </proc/self/mounts 2>/dev/null
        # An absolute directory (/sys/fs/cgroup/...): plain directories.
        if [[ $cur == /sys/* ]]; then
                compgen -d -- "$cur"
                return 0
        fi
        [[ -z $cur || $cur == /* ]] || return 0
        [[ -n $cur ]] || cur=/
        for mnt in "${mounts[@]}"; do
                while IFS= read -r d; do
                        printf '%s\n' "${d#"$mnt"}"
                done < <(compgen -d -- "$mnt$cur")
        done
}

# COMPREPLY += the arguments that start with $cur (compgen -W would split
# and expand them).
_steerctl_match() {
        local w
        for w; do
                [[ $w == "$cur"* ]] && COMPREPLY+=("$w")
        done
        return 0
}

_steerctl() {
        local cur prev words cword split=false
        COMPREPLY=()
        if declare -F _init_completion >/dev/null; then
                _init_completion -s -n : || return
        else
                # Without the helpers, bash splits --opt=value (and a:b) into
                # three words: join them again, then split off the value as
                # _init_completion -s does.
                local j
                words=()
                cword=0
                for ((j = 0; j < ${#COMP_WORDS[@]}; j++)); do
                        if ((j > 0 && ${#words[@]} > 0)) &&
                                [[ ${COMP_WORDS[j]} == [=:] || ${COMP_WORDS[j - 1]} == [=:] ]]; then
                                words[${#words[@]} - 1]+=${COMP_WORDS[j]}
                        else
                                words+=("${COMP_WORDS[j]}")
                        fi
                        ((j == COMP_CWORD)) && cword=$((${#words[@]} - 1))
                done
                cur=${words[cword]-}
                prev=${words[cword - 1]-}
                if [[ $cur == --*=* ]]; then
                        prev=${cur%%=*}
                        cur=${cur#*=}
                        split=true
                fi
        fi

        local -a verbs=(status mode opt-in opt-out list top monitor reload explain trial trials)
        local -a modes=(off observe latency balanced)
        local -a policies=(latency balanced)
        local -a common=(-h --help --version --json --json= --no-legend --no-pager)
        local -a policy_opts=(-p --policy --policy= --evaluate --evaluate= --search --search=)
        local -a top_opts=(--once -n --iterations --iterations= -d --delay --delay=)
        local -a mode_opts=(--reset)
        local -a trial_opts=(--duration --duration= --block --block= --metric --metric=
                --higher-is-better --lower-is-better --stop --show --no-wait)
        local -a metrics=(latency slices pressure)
        local verb='' i n_args=0 w show=false

        # The verb is the first word that is neither an option nor an
        # option's argument; count the arguments after it.
        for ((i = 1; i < cword; i++)); do
                w=${words[i]}
                case $w in
                -p | --policy | -n | --iterations | -d | --delay | --duration | --block | --metric)
                        ((i++))
                        ;;
                --show) show=true ;;
                -*) ;;
                *)
                        if [[ -z $verb ]]; then
                                verb=$w
                        else
                                ((n_args++))
                        fi
                        ;;
                esac
        done

        case $prev in
        -p | --policy)
                _steerctl_match "${policies[@]}"
                return
                ;;
        --json)
                if $split; then
                        _steerctl_match short pretty off
                        return
                fi
                ;;
        --evaluate)
                if $split; then
                        _steerctl_match auto no
                        return
                fi
                ;;
        --search)
                if $split; then
                        _steerctl_match yes no
                        return
                fi
                ;;
        --metric)
                # Or SOURCE#NAME{LABELS}@AGG, which is the operator's to write.
                _steerctl_match "${metrics[@]}"
                return
                ;;
        -n | --iterations | -d | --delay | --duration | --block)
                return # a number, a time span
                ;;
        esac

        if [[ $cur == -* ]]; then
                local -a opts=("${common[@]}")
                case $verb in
                opt-in) opts+=("${policy_opts[@]}") ;;
                top) opts+=("${top_opts[@]}") ;;
                mode) opts+=("${mode_opts[@]}") ;;
                trial) opts+=("${trial_opts[@]}") ;;
                '') opts+=("${policy_opts[@]}" "${top_opts[@]}" "${mode_opts[@]}" "${trial_opts[@]}") ;;
                esac
                _steerctl_match "${opts[@]}"
                # --json= and the like wait for their value.
                if [[ ${#COMPREPLY[@]} -eq 1 && ${COMPREPLY[0]} == *= ]] && declare -F compopt >/dev/null; then
                        compopt -o nospace
                fi
                return
        fi

        if [[ -z $verb ]]; then
                _steerctl_match "${verbs[@]}"
                return
        fi

        ((n_args == 0)) || return
        case $verb in
        mode)
                _steerctl_match "${modes[@]}"
                ;;
        opt-out | opt-in | explain | trial)
                local -a names
                if [[ $verb == trial ]] && $show; then
                        mapfile -t names < <(_steerctl_trial_ids)
                elif [[ $verb == opt-in ]]; then
                        # The opted-in ones (to change their policy) and the
                        # host's cgroups, each once.
                        mapfile -t names < <({
                                _steerctl_opted_in
                                _steerctl_cgroup_paths "$cur"
                        } | LC_ALL=C sort -u)
                else
                        mapfile -t names < <(_steerctl_opted_in)
                fi
                _steerctl_match "${names[@]}"
                # A cgroup name may contain ':', which bash splits words at.
                if declare -F __ltrim_colon_completions >/dev/null; then
                        __ltrim_colon_completions "$cur"
                elif [[ $cur == *:* && $COMP_WORDBREAKS == *:* ]]; then
                        COMPREPLY=("${COMPREPLY[@]#"${cur%"${cur##*:}"}"}")
                fi
                ;;
        esac
} &&
        complete -F _steerctl steerctl

# ex: filetype=sh
