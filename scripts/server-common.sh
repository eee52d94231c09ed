# Functions shared by the test servers' scripts (s3-server.sh, catalog-server.sh),
# sourced by them; each defines log and die first.

port_in_use() {
	(echo >"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# alive PID: true while PID runs and is not a zombie (PID 1 here may not reap).
alive() {
	local pid="$1" state
	kill -0 "$pid" 2>/dev/null || return 1
	if [[ -r "/proc/$pid/stat" ]]; then
		state="$(sed -E 's/^.*\) ([A-Za-z]).*$/\1/' "/proc/$pid/stat" 2>/dev/null || true)"
		[[ "$state" != Z && "$state" != X ]] || return 1
	fi
	return 0
}

# stop_server DIR PATTERN NAME TENTHS: stops the server whose pid DIR/pid holds,
# if its command line still matches PATTERN (a pid may have been reused): TERM,
# then KILL after TENTHS tenths of a second.
stop_server() {
	local dir="$1" pattern="$2" name="$3" tenths="$4" pid i
	[[ -f "$dir/pid" ]] || return 0
	pid="$(cat "$dir/pid")"
	[[ "$pid" =~ ^[0-9]+$ ]] || die "bad pid file $dir/pid"
	if alive "$pid"; then
		if [[ -r "/proc/$pid/cmdline" ]] && ! tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "$pattern"; then
			log "pid $pid is not $name any more; not killing it"
		else
			kill -TERM "$pid" 2>/dev/null || true
			for ((i = 0; i < tenths; i++)); do
				alive "$pid" || break
				sleep 0.1
			done
			if alive "$pid"; then
				log "$name (pid $pid) did not exit after $((tenths / 10)) s; sending KILL"
				kill -KILL "$pid" 2>/dev/null || true
				sleep 0.2
			fi
		fi
	fi
	rm -f "$dir/pid"
}
