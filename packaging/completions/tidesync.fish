function __tidesync_should_offer_completions_for_flags_or_options -a expected_commands
    set -l non_repeating_flags_or_options $argv[2..]
    set -l non_repeating_flags_or_options_absent 0
    set -l positional_index 0
    set -l commands
    __tidesync_parse_tokens
    test "$commands" = "$expected_commands"; and return $non_repeating_flags_or_options_absent
end

function __tidesync_should_offer_completions_for_positional -a expected_commands positional_index_comparison expected_positional_index
    set -l non_repeating_flags_or_options
    set -l non_repeating_flags_or_options_absent 0
    set -l positional_index 0
    set -l commands
    __tidesync_parse_tokens
    test "$commands" = "$expected_commands" -a \( "$positional_index" "$positional_index_comparison" "$expected_positional_index" \)
end

function __tidesync_parse_tokens -S
    set -l unparsed_tokens (__tidesync_tokens -pc)
    switch $unparsed_tokens[1]
    case 'tidesync'
        __tidesync_parse_subcommand 0 'version' 'h/help'
        switch $unparsed_tokens[1]
        case 'run'
            __tidesync_parse_subcommand 0 'config=' 'once' 'allow-mass-delete' 'log-level=' 'version' 'h/help'
        case 'status'
            __tidesync_parse_subcommand 0 'config=' 'socket=' 'json' 'watch' 'interval=' 'domain=' 'version' 'h/help'
        case 'conflicts'
            __tidesync_parse_subcommand 0 'config=' 'socket=' 'json' 'domain=' 'limit=' 'version' 'h/help'
        case 'pause'
            __tidesync_parse_subcommand 1 'config=' 'socket=' 'version' 'h/help'
        case 'resume'
            __tidesync_parse_subcommand 1 'config=' 'socket=' 'version' 'h/help'
        case 'sync-now'
            __tidesync_parse_subcommand 1 'config=' 'socket=' 'version' 'h/help'
        case 'allow-deletions'
            __tidesync_parse_subcommand 1 'config=' 'socket=' 'version' 'h/help'
        case 'file-status'
            __tidesync_parse_subcommand -r 1 'config=' 'socket=' 'json' 'version' 'h/help'
        case 'pin'
            __tidesync_parse_subcommand -r 1 'config=' 'socket=' 'version' 'h/help'
        case 'unpin'
            __tidesync_parse_subcommand -r 1 'config=' 'socket=' 'version' 'h/help'
        case 'evict'
            __tidesync_parse_subcommand -r 1 'config=' 'socket=' 'version' 'h/help'
        case 'hydrate'
            __tidesync_parse_subcommand -r 1 'config=' 'socket=' 'range=' 'version' 'h/help'
        case 'thumbnails'
            __tidesync_parse_subcommand -r 1 'config=' 'socket=' 'version' 'h/help'
        case 'check-config'
            __tidesync_parse_subcommand 0 'config=' 'version' 'h/help'
        case 'help'
            __tidesync_parse_subcommand -r 1 'version'
        end
    end
end

function __tidesync_tokens
    if test (string split -m 1 -f 1 -- . "$FISH_VERSION") -gt 3
        commandline --tokens-raw $argv
    else
        commandline -o $argv
    end
end

function __tidesync_parse_subcommand -S -a positional_count
    argparse -s r -- $argv
    set -l option_specs $argv[2..]
    set -l is_repeating_positional $_flag_r
    set -el _flag_r
    set -a commands $unparsed_tokens[1]
    set positional_index 0
    while true
        set -e unparsed_tokens[1]
        argparse -sn "$commands" $option_specs -- $unparsed_tokens 2> /dev/null
        set unparsed_tokens $argv
        set positional_index (math $positional_index + 1)
        for non_repeating_flag_or_option in $non_repeating_flags_or_options
            if set -ql "_flag_$(string replace -a - _ -- $non_repeating_flag_or_option)"
                set non_repeating_flags_or_options_absent 1
                break
            end
        end
        test (count $unparsed_tokens) -eq 0 -o \( -z "$is_repeating_positional" -a "$positional_index" -gt "$positional_count" \) && break
    end
end

function __tidesync_complete_directories
    set -l token (commandline -t)
    string match -- '*/' $token
    set -l subdirs $token*/
    printf %s\n $subdirs
end

function __tidesync_custom_completion
    set -x SAP_SHELL fish
    set -x SAP_SHELL_VERSION $FISH_VERSION
    set -l tokens (__tidesync_tokens -p)
    if test -z "$(__tidesync_tokens -t)"
        set -l index (count (__tidesync_tokens -pc))
        set tokens $tokens[..$index] \'\' $tokens[(math $index + 1)..]
    end
    command $tokens[1] $argv $tokens
end

complete -c 'tidesync' -f
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync" version' -l 'version' -d 'Show the version.'
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_positional "tidesync" -eq 1' -fa 'run' -d 'Run the sync daemon in the foreground (systemd runs it).'
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_positional "tidesync" -eq 1' -fa 'status' -d 'Show what the daemon is doing: state, transfers, pending items, errors, conflicts.'
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_positional "tidesync" -eq 1' -fa 'conflicts' -d 'List the conflicts recorded: original path, conflict copy, when, both versions.'
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_positional "tidesync" -eq 1' -fa 'pause' -d 'Pause syncing (one domain or all): running transfers finish, no new one starts.'
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_positional "tidesync" -eq 1' -fa 'resume' -d 'Resume syncing after `tidesync pause`.'
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_positional "tidesync" -eq 1' -fa 'sync-now' -d 'Start a sync pass now instead of at the next poll; a domain waiting on an error retries now.'
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_positional "tidesync" -eq 1' -fa 'allow-deletions' -d 'Carry out, once, the deletions a domain holds back (an emptied side, or more than max_delete).'
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_positional "tidesync" -eq 1' -fa 'file-status' -d 'Show what files hold: dataless, partial N %, or materialized; pinned, pending, conflict.'
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_positional "tidesync" -eq 1' -fa 'pin' -d 'Always keep files downloaded (a folder: everything in it, and what comes later).'
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_positional "tidesync" -eq 1' -fa 'unpin' -d 'Undo `pin`: the files may be evicted again (nothing is evicted now).'
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_positional "tidesync" -eq 1' -fa 'evict' -d 'Free the space of downloaded files: they stay as placeholders, downloaded again when read.'
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_positional "tidesync" -eq 1' -fa 'hydrate' -d 'Download the missing bytes of placeholders now (a folder: every placeholder in it).'
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_positional "tidesync" -eq 1' -fa 'thumbnails' -d 'Make thumbnails of image placeholders without downloading them (a folder: every one in it).'
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_positional "tidesync" -eq 1' -fa 'check-config' -d 'Check the configuration file and report every problem in it.'
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_positional "tidesync" -eq 1' -fa 'help' -d 'Show subcommand help information.'
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync run" config' -l 'config' -d 'The config file (default: $XDG_CONFIG_HOME/tidesync/config.toml).' -rfka ''
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync run" once' -l 'once' -d 'Do one full pass, then exit.'
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync run" allow-mass-delete' -l 'allow-mass-delete' -d 'Carry out deletions even when a pass deletes more than max_delete items (or half a domain).'
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync run" log-level' -l 'log-level' -d 'How much to log: trace, debug, info, notice, warning, error or critical (default: the config\'s log_level, else info).' -rfka 'trace debug info notice warning error critical'
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync run" version' -l 'version' -d 'Show the version.'
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync run" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync status" config' -l 'config' -d 'The configuration file (default: $XDG_CONFIG_HOME/tidesync/config.toml).' -rfka ''
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync status" socket' -l 'socket' -d 'The daemon\'s control socket (default: the config\'s `socket`, else $XDG_RUNTIME_DIR/tidesync.sock).' -rfka ''
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync status" json' -l 'json' -d 'Print JSON (schema version 1) instead of the screen.'
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync status" watch' -l 'watch' -d 'Refresh in place every --interval seconds until interrupted (with --json: one JSON document per line).'
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync status" interval' -l 'interval' -d 'Seconds between refreshes with --watch.' -rfka ''
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync status" domain' -l 'domain' -d 'Only this domain.' -rfka ''
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync status" version' -l 'version' -d 'Show the version.'
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync status" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync conflicts" config' -l 'config' -d 'The configuration file (default: $XDG_CONFIG_HOME/tidesync/config.toml).' -rfka ''
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync conflicts" socket' -l 'socket' -d 'The daemon\'s control socket (default: the config\'s `socket`, else $XDG_RUNTIME_DIR/tidesync.sock).' -rfka ''
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync conflicts" json' -l 'json' -d 'Print JSON (schema version 1).'
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync conflicts" domain' -l 'domain' -d 'Only this domain.' -rfka ''
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync conflicts" limit' -l 'limit' -d 'At most this many, newest first.' -rfka ''
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync conflicts" version' -l 'version' -d 'Show the version.'
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync conflicts" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync pause" config' -l 'config' -d 'The configuration file (default: $XDG_CONFIG_HOME/tidesync/config.toml).' -rfka ''
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync pause" socket' -l 'socket' -d 'The daemon\'s control socket (default: the config\'s `socket`, else $XDG_RUNTIME_DIR/tidesync.sock).' -rfka ''
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync pause" version' -l 'version' -d 'Show the version.'
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync pause" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync resume" config' -l 'config' -d 'The configuration file (default: $XDG_CONFIG_HOME/tidesync/config.toml).' -rfka ''
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync resume" socket' -l 'socket' -d 'The daemon\'s control socket (default: the config\'s `socket`, else $XDG_RUNTIME_DIR/tidesync.sock).' -rfka ''
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync resume" version' -l 'version' -d 'Show the version.'
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync resume" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync sync-now" config' -l 'config' -d 'The configuration file (default: $XDG_CONFIG_HOME/tidesync/config.toml).' -rfka ''
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync sync-now" socket' -l 'socket' -d 'The daemon\'s control socket (default: the config\'s `socket`, else $XDG_RUNTIME_DIR/tidesync.sock).' -rfka ''
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync sync-now" version' -l 'version' -d 'Show the version.'
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync sync-now" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync allow-deletions" config' -l 'config' -d 'The configuration file (default: $XDG_CONFIG_HOME/tidesync/config.toml).' -rfka ''
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync allow-deletions" socket' -l 'socket' -d 'The daemon\'s control socket (default: the config\'s `socket`, else $XDG_RUNTIME_DIR/tidesync.sock).' -rfka ''
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync allow-deletions" version' -l 'version' -d 'Show the version.'
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync allow-deletions" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync file-status" config' -l 'config' -d 'The configuration file (default: $XDG_CONFIG_HOME/tidesync/config.toml).' -rfka ''
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync file-status" socket' -l 'socket' -d 'The daemon\'s control socket (default: the config\'s `socket`, else $XDG_RUNTIME_DIR/tidesync.sock).' -rfka ''
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync file-status" json' -l 'json' -d 'Print JSON.'
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync file-status" version' -l 'version' -d 'Show the version.'
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync file-status" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync pin" config' -l 'config' -d 'The configuration file (default: $XDG_CONFIG_HOME/tidesync/config.toml).' -rfka ''
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync pin" socket' -l 'socket' -d 'The daemon\'s control socket (default: the config\'s `socket`, else $XDG_RUNTIME_DIR/tidesync.sock).' -rfka ''
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync pin" version' -l 'version' -d 'Show the version.'
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync pin" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync unpin" config' -l 'config' -d 'The configuration file (default: $XDG_CONFIG_HOME/tidesync/config.toml).' -rfka ''
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync unpin" socket' -l 'socket' -d 'The daemon\'s control socket (default: the config\'s `socket`, else $XDG_RUNTIME_DIR/tidesync.sock).' -rfka ''
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync unpin" version' -l 'version' -d 'Show the version.'
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync unpin" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync evict" config' -l 'config' -d 'The configuration file (default: $XDG_CONFIG_HOME/tidesync/config.toml).' -rfka ''
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync evict" socket' -l 'socket' -d 'The daemon\'s control socket (default: the config\'s `socket`, else $XDG_RUNTIME_DIR/tidesync.sock).' -rfka ''
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync evict" version' -l 'version' -d 'Show the version.'
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync evict" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync hydrate" config' -l 'config' -d 'The configuration file (default: $XDG_CONFIG_HOME/tidesync/config.toml).' -rfka ''
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync hydrate" socket' -l 'socket' -d 'The daemon\'s control socket (default: the config\'s `socket`, else $XDG_RUNTIME_DIR/tidesync.sock).' -rfka ''
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync hydrate" range' -l 'range' -d 'Only this byte range, e.g. 0:4096 or 1GiB:4MiB.' -rfka ''
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync hydrate" version' -l 'version' -d 'Show the version.'
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync hydrate" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync thumbnails" config' -l 'config' -d 'The configuration file (default: $XDG_CONFIG_HOME/tidesync/config.toml).' -rfka ''
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync thumbnails" socket' -l 'socket' -d 'The daemon\'s control socket (default: the config\'s `socket`, else $XDG_RUNTIME_DIR/tidesync.sock).' -rfka ''
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync thumbnails" version' -l 'version' -d 'Show the version.'
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync thumbnails" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync check-config" config' -l 'config' -d 'The configuration file (default: $XDG_CONFIG_HOME/tidesync/config.toml).' -rfka ''
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync check-config" version' -l 'version' -d 'Show the version.'
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync check-config" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tidesync' -n '__tidesync_should_offer_completions_for_flags_or_options "tidesync help" version' -l 'version' -d 'Show the version.'
