#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# dust-invite as a user drives it: keygen, create, show, list, and the clear
# errors for a wrong password, loose permissions, a bad file and reuse of a
# tunnel address. Usage: dust-invite.sh PATH-TO-dust-invite
set -u
BIN=$1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
pass=0 fail=0

ok() { pass=$((pass + 1)); echo "ok   $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; }
# expect NAME EXIT-CODE PATTERN -- command...: exit code and an output line must match
expect() {
	name=$1 code=$2 pat=$3
	shift 4
	out=$("$@" 2>&1)
	rc=$?
	if [ "$rc" -eq "$code" ] && printf '%s\n' "$out" | grep -Eq -- "$pat"; then
		ok "$name"
	else
		bad "$name (exit $rc, output: $out)"
	fi
}

echo "first password" >"$T/pw"
echo "other password" >"$T/wrong"
expect keygen 0 '^[0-9a-f]{64}$' -- "$BIN" keygen --out "$T/key"
expect keygen-mode 0 '^600$' -- stat -c %a "$T/key"
expect keygen-no-clobber 1 'refusing to overwrite' -- "$BIN" keygen --out "$T/key"
expect create 0 '3 invitation\(s\) added' -- "$BIN" create --store "$T/store" --key "$T/key" \
	--server 192.0.2.1 --port 4433 --tunnel-net 10.9.0.0/24 --count 3 \
	--password-file "$T/pw" --out-dir "$T"
expect store-mode 0 '^600$' -- stat -c %a "$T/store"
expect show 0 'tunnel: +10\.9\.0\.3/24' -- "$BIN" show --file "$T/invite-2.txt" --password-file "$T/pw"
expect show-env 0 'server: +192\.0\.2\.1 port 4433' -- env DUST_PASSWORD="first password" \
	"$BIN" show --file "$T/invite-1.txt"
expect suite-default 0 'suite: +chacha20-poly1305' -- "$BIN" show --file "$T/invite-1.txt" --password-file "$T/pw"
mkdir "$T/gcm"
expect create-gcm 0 '1 invitation\(s\) added' -- "$BIN" create --store "$T/gcm/store" --key "$T/key" \
	--server 192.0.2.1 --port 4433 --tunnel 10.9.1.2/24 --suite aes-256-gcm \
	--password-file "$T/pw" --out-dir "$T/gcm"
expect show-gcm 0 'suite: +aes-256-gcm' -- "$BIN" show --file "$T/gcm/invite-1.txt" --password-file "$T/pw"
expect bad-suite 2 'unknown cipher suite rot13' -- "$BIN" create --store "$T/gcm/store" --key "$T/key" \
	--server 192.0.2.1 --port 4433 --tunnel 10.9.1.3/24 --suite rot13 --store-only
expect show-wrong-password 1 'wrong password' -- "$BIN" show --file "$T/invite-1.txt" --password-file "$T/wrong"
echo "this is not an invitation" >"$T/junk.txt"
expect show-junk 1 'not a Dust invitation' -- "$BIN" show --file "$T/junk.txt" --password-file "$T/pw"
expect show-missing 1 'No such file' -- "$BIN" show --file "$T/nope.txt" --password-file "$T/pw"
expect list 0 '3 invitations: 0 used, 0 expired, 3 unused' -- "$BIN" list --store "$T/store" --key "$T/key"
expect list-addresses 0 '10\.9\.0\.4/24' -- "$BIN" list --store "$T/store" --key "$T/key"
expect create-more 0 '5 in all' -- "$BIN" create --store "$T/store" --key "$T/key" \
	--server 192.0.2.1 --port 4433 --tunnel-net 10.9.0.0/24 --count 2 --store-only
expect no-reuse 0 '10\.9\.0\.6/24' -- "$BIN" list --store "$T/store" --key "$T/key"
expect tunnel-taken 1 'already belongs' -- "$BIN" create --store "$T/store" --key "$T/key" \
	--server 192.0.2.1 --port 4433 --tunnel 10.9.0.2/24 --store-only
chmod 644 "$T/key"
expect key-permissions 1 'chmod 600' -- "$BIN" create --store "$T/store" --key "$T/key" \
	--server 192.0.2.1 --port 4433 --tunnel-net 10.9.0.0/24 --store-only
chmod 600 "$T/key"
chmod 640 "$T/store"
expect store-permissions 1 'accessible by group or others' -- "$BIN" list --store "$T/store" --key "$T/key"
chmod 600 "$T/store"
echo garbage >"$T/badstore" && chmod 600 "$T/badstore"
expect store-corrupt 1 'not a Dust invitation store' -- "$BIN" list --store "$T/badstore" --key "$T/key"
expect bad-address 1 'not an IPv4 or IPv6 address' -- "$BIN" create --store "$T/store" \
	--key "$T/key" --server nowhere --port 4433 --tunnel-net 10.9.0.0/24 --store-only
expect missing-args 1 'create needs' -- "$BIN" create --store "$T/store"
# --out-dir: a missing directory is created (0700); a command that cannot
# write every text changes nothing (no store, no .bind, no texts left)
expect outdir-missing 0 '2 invitation\(s\) added' -- "$BIN" create --store "$T/s2" \
	--key "$T/key" --server 192.0.2.1 --port 4433 --tunnel-net 10.9.0.0/24 --count 2 \
	--password-file "$T/pw" --out-dir "$T/new/invites"
expect outdir-created 0 '^700 invite-1.txt invite-2.txt$' -- sh -c \
	"cd '$T/new/invites' && echo \$(stat -c %a .) *"
expect outdir-clash 1 'invite-1.txt exists' -- "$BIN" create --store "$T/s2" --key "$T/key" \
	--server 192.0.2.1 --port 4433 --tunnel-net 10.9.0.0/24 --count 2 \
	--password-file "$T/pw" --out-dir "$T/new/invites"
expect outdir-clash-store 0 '2 invitations: 0 used' -- "$BIN" list --store "$T/s2" --key "$T/key"
touch "$T/afile"
expect outdir-unusable 1 'afile' -- "$BIN" create --store "$T/s3" --key "$T/key" \
	--server 192.0.2.1 --port 4433 --tunnel-net 10.9.0.0/24 --password-file "$T/pw" \
	--out-dir "$T/afile/invites"
expect outdir-unusable-nostore 0 '^none$' -- sh -c "ls '$T' | grep s3 || echo none"
mkdir "$T/ro" && chmod 500 "$T/ro"
if [ "$(id -u)" -ne 0 ]; then
	expect outdir-readonly 1 'Permission denied' -- "$BIN" create --store "$T/s4" --key "$T/key" \
		--server 192.0.2.1 --port 4433 --tunnel-net 10.9.0.0/24 --password-file "$T/pw" \
		--out-dir "$T/ro"
	expect outdir-readonly-nostore 0 '^none$' -- sh -c "ls '$T' | grep s4 || echo none"
fi
# out of addresses half way: no part files, no store
expect outdir-midway 1 'no free address' -- "$BIN" create --store "$T/s5" --key "$T/key" \
	--server 192.0.2.1 --port 4433 --tunnel-net 10.8.0.0/30 --count 3 \
	--password-file "$T/pw" --out-dir "$T/mid"
expect outdir-midway-clean 0 '^none$' -- sh -c "{ ls '$T' | grep s5; ls -A '$T/mid'; } | grep . || echo none"
# profiles: quic needs a valid cover name; ALPN h3 only; list and show name them
Q="--store $T/sq --key $T/key --server 192.0.2.1 --tunnel-net 10.7.0.0/24 --store-only"
expect profile-bad 1 "unknown --profile 'tcp': random or quic" -- "$BIN" create $Q --port 443 --profile tcp
# numbers are checked whole: "44x" was 44, "x" 0, "-1" 4294967295
expect num-port 2 "--port '44x': want a whole number in 1..65535" -- "$BIN" create $Q --port 44x
expect num-port-range 2 "--port '70000': want a whole number in 1..65535" -- "$BIN" create $Q \
	--port 70000
expect num-count 2 "--count '-1': want a whole number" -- "$BIN" create $Q --port 443 --count -1
expect num-expiry 2 "--expiry-days 'x'" -- "$BIN" create $Q --port 443 --expiry-days x
expect profile-quic-no-sni 1 'profile quic needs --cover-sni' -- "$BIN" create $Q --port 443 --profile quic
expect profile-bad-sni 1 "cover-sni: cover name 'Bad_Name'" -- "$BIN" create $Q --port 443 \
	--profile quic --cover-sni Bad_Name
expect profile-bad-sni-dots 1 'is not a host name' -- "$BIN" create $Q --port 443 \
	--profile quic --cover-sni 'a..b'
expect profile-bad-alpn 1 "unknown --cover-alpn 'h2': only h3" -- "$BIN" create $Q --port 443 \
	--profile quic --cover-sni www.example.com --cover-alpn h2
expect profile-sni-random 1 'belong to --profile quic' -- "$BIN" create $Q --port 4433 \
	--cover-sni www.example.com
expect profile-refused-nostore 0 '^none$' -- sh -c "ls '$T' | grep sq || echo none"
expect profile-quic 0 '2 invitation\(s\) added' -- "$BIN" create $Q --port 443 --count 2 \
	--profile quic --cover-sni www.example.com --cover-alpn h3
expect profile-random 0 '3 in all' -- "$BIN" create $Q --port 4433 --profile random
expect list-quic 0 '^[0-9a-f]{16} +10\.7\.0\.3/24 .* quic:www\.example\.com +unused$' -- \
	"$BIN" list --store "$T/sq" --key "$T/key"
expect list-random 0 '^[0-9a-f]{16} +10\.7\.0\.4/24 .* random +unused$' -- "$BIN" list --store "$T/sq" --key "$T/key"
expect list-header 0 '^id +tunnel +expires +profile +state$' -- "$BIN" list --store "$T/sq" --key "$T/key"
expect list-profile-count 0 '^2$' -- sh -c "'$BIN' list --store '$T/sq' --key '$T/key' | grep -c ' quic:www.example.com '"
expect create-quic-text 0 '1 invitation\(s\) added' -- "$BIN" create --store "$T/sq2" --key "$T/key" \
	--server 192.0.2.1 --port 443 --tunnel 10.6.0.2/24 --profile quic --cover-sni cdn.example.org \
	--password-file "$T/pw" --out-dir "$T/q"
expect show-quic 0 '^profile: +quic \(cover cdn\.example\.org, alpn h3\)$' -- "$BIN" show \
	--file "$T/q/invite-1.txt" --password-file "$T/pw"
expect show-quic-port 0 'server: +192\.0\.2\.1 port 443$' -- "$BIN" show \
	--file "$T/q/invite-1.txt" --password-file "$T/pw"
expect show-random 0 '^profile: +random$' -- "$BIN" show --file "$T/invite-1.txt" --password-file "$T/pw"
# list only reads the store: it makes no journal or lock file (it used to
# open the store read-write and create STORE.bind) and works on a store
# whose files are read-only
mkdir "$T/lst"
"$BIN" create --store "$T/lst/store" --key "$T/key" --server 192.0.2.1 --port 4433 \
	--tunnel-net 10.9.0.0/24 --count 2 --store-only 2>/dev/null
rm -f "$T/lst/store.bind" "$T/lst/store.lock"
chmod 400 "$T/lst/store"
expect list-readonly 0 '2 invitations: 0 used' -- "$BIN" list --store "$T/lst/store" --key "$T/key"
expect list-writes-nothing 0 '^store 400$' -- sh -c "cd '$T/lst' && echo \$(ls -A) \$(stat -c %a store)"
# Texts are secrets: 0600 in a directory that exists already (0755 here)
# and under a loose umask, never written through a link planted at the
# part file's name
mkdir -m 755 "$T/open"
echo victim >"$T/open/victim"
ln -s victim "$T/open/invite-1.txt.part"
expect outdir-existing 0 '2 invitation\(s\) added' -- sh -c "umask 022 && exec '$BIN' create \
	--store '$T/s6' --key '$T/key' --server 192.0.2.1 --port 4433 --tunnel-net 10.9.0.0/24 \
	--count 2 --password-file '$T/pw' --out-dir '$T/open'"
expect outdir-text-modes 0 '^600 600$' -- sh -c "echo \$(stat -c %a '$T/open/invite-1.txt' '$T/open/invite-2.txt')"
expect outdir-text-regular 0 '^regular file$' -- stat -c %F "$T/open/invite-1.txt"
expect outdir-victim 0 '^victim$' -- cat "$T/open/victim"
expect outdir-opens 0 'tunnel: +10\.9\.0\.2/24' -- "$BIN" show --file "$T/open/invite-1.txt" --password-file "$T/pw"
# Secret files are written through a temporary file of their own: a symlink
# or a file planted at the old fixed name (KEY.tmp, STORE.tmp) is never
# opened, so its target is not overwritten and a planted file's owner never
# holds the new key open; nothing temporary is left behind.
mkdir "$T/plant"
P=$T/plant
echo victim >"$P/victim" && chmod 644 "$P/victim"
ln -s "$P/victim" "$P/key.tmp"
ln -s "$P/victim" "$P/store.tmp"
ln -s "$P/victim" "$P/store.bind.tmp"
: >"$P/key2.tmp" && chmod 666 "$P/key2.tmp"
expect plant-keygen 0 '^[0-9a-f]{64}$' -- "$BIN" keygen --out "$P/key"
expect plant-keygen-pretmp 0 '^[0-9a-f]{64}$' -- "$BIN" keygen --out "$P/key2"
expect plant-create 0 '2 invitation\(s\) added' -- "$BIN" create --store "$P/store" --key "$P/key" \
	--server 192.0.2.1 --port 4433 --tunnel-net 10.9.0.0/24 --count 2 --store-only
expect plant-victim 0 '^victim 644 7$' -- sh -c "echo \$(cat '$P/victim') \$(stat -c '%a %s' '$P/victim')"
expect plant-key-mode 0 '^600 regular file 65$' -- stat -c '%a %F %s' "$P/key"
expect plant-pretmp-untouched 0 '^666 0$' -- stat -c '%a %s' "$P/key2.tmp"
expect plant-key2-mode 0 '^600 65$' -- stat -c '%a %s' "$P/key2"
expect plant-store-mode 0 '^600 regular file$' -- stat -c '%a %F' "$P/store"
expect plant-links-kept 0 '^3$' -- sh -c "find '$P' -type l | wc -l"
expect plant-no-tmp-left 0 '^none$' -- sh -c "ls -A '$P' | grep 'tmp-' || echo none"
# Secret files are read as themselves (F10/F8 of the store issue): a key or a
# password file that is a symlink, a FIFO (refused at once, not waited on) or
# another user's file is refused; a long password works the same in every
# tool, and one past the room (1023 bytes) is refused, never cut.
R=$T/read
mkdir "$R"
ln -s "$T/key" "$R/key-link"
ln -s "$T/pw" "$R/pw-link"
mkfifo "$R/key-fifo" "$R/pw-fifo"
cp "$T/key" "$R/their-key" && chown 65534 "$R/their-key"
expect read-key-link 1 'symbolic link' -- "$BIN" list --store "$T/store" --key "$R/key-link"
expect read-key-fifo 1 'not a regular file' -- timeout 10 "$BIN" list --store "$T/store" --key "$R/key-fifo"
expect read-key-owner 1 'owned by uid 65534' -- "$BIN" list --store "$T/store" --key "$R/their-key"
expect read-pw-link 1 'symbolic link' -- "$BIN" show --file "$T/invite-1.txt" --password-file "$R/pw-link"
expect read-pw-fifo 1 'not a regular file' -- timeout 10 "$BIN" show --file "$T/invite-1.txt" --password-file "$R/pw-fifo"
head -c 1000 /dev/zero | tr '\0' p >"$R/pw-1000" && chmod 600 "$R/pw-1000"
head -c 1024 /dev/zero | tr '\0' p >"$R/pw-1024" && chmod 600 "$R/pw-1024"
expect long-pw-create 0 '1 invitation\(s\) added' -- "$BIN" create --store "$R/store" --key "$T/key" \
	--server 192.0.2.1 --port 4433 --tunnel-net 10.9.0.0/24 --count 1 \
	--password-file "$R/pw-1000" --out-dir "$R/texts"
expect long-pw-show 0 'tunnel: +10\.9\.0\.2/24' -- "$BIN" show --file "$R/texts/invite-1.txt" --password-file "$R/pw-1000"
expect long-pw-cut 1 'wrong password' -- sh -c "head -c 255 '$R/pw-1000' >'$R/pw-255' && chmod 600 '$R/pw-255' && '$BIN' show --file '$R/texts/invite-1.txt' --password-file '$R/pw-255'"
expect too-long-pw 1 'longer than 1023 bytes' -- "$BIN" show --file "$R/texts/invite-1.txt" --password-file "$R/pw-1024"
expect shared-pw-warns 0 'others can read this password' -- "$BIN" show --file "$T/invite-1.txt" --password-file "$T/pw"
# A password that seals texts has 12 characters at least (F6); a text on the
# command line is opened, with a warning that ps shows it (F9).
echo "short pw 11" >"$R/pw-11" && chmod 600 "$R/pw-11"
echo "long enough" >"$R/pw-11b" && echo "twelve chars" >"$R/pw-12" && chmod 600 "$R/pw-11b" "$R/pw-12"
expect short-pw-refused 1 'at least 12 characters' -- "$BIN" create --store "$R/store" --key "$T/key" \
	--server 192.0.2.1 --port 4433 --tunnel-net 10.9.0.0/24 --count 1 \
	--password-file "$R/pw-11" --out-dir "$R/short"
expect short-pw-nothing-written 0 '^1 invitations' -- "$BIN" list --store "$R/store" --key "$T/key"
expect twelve-pw-sealed 0 '1 invitation\(s\) added' -- "$BIN" create --store "$R/store" --key "$T/key" \
	--server 192.0.2.1 --port 4433 --tunnel-net 10.9.0.0/24 --count 1 \
	--password-file "$R/pw-12" --out-dir "$R/twelve"
# F6: --password-each seals each text under its own random password, written
# beside it 0600; a text does not open with another's; no --out-dir, refused
expect pw-each 0 '3 invitation\(s\) added' -- "$BIN" create --store "$R/store" --key "$T/key" \
	--server 192.0.2.1 --port 4433 --tunnel-net 10.9.0.0/24 --count 3 \
	--password-each --out-dir "$R/each"
expect pw-each-modes 0 '^600 600 600 600 600 600$' -- sh -c "stat -c %a '$R/each'/invite-1.txt '$R/each'/invite-1.pw '$R/each'/invite-2.txt '$R/each'/invite-2.pw '$R/each'/invite-3.txt '$R/each'/invite-3.pw | tr '\n' ' ' | sed 's/ $//'"
expect pw-each-distinct 0 '^3$' -- sh -c "cat '$R/each'/invite-*.pw | sort -u | wc -l"
expect pw-each-strong 0 '^[2-9a-km-np-z]{4}( [2-9a-km-np-z]{4}){4}$' -- cat "$R/each/invite-3.pw"
expect pw-each-opens 0 'tunnel: +10\.9\.0\.' -- "$BIN" show --file "$R/each/invite-2.txt" --password-file "$R/each/invite-2.pw"
expect pw-each-not-shared 1 'wrong password' -- "$BIN" show --file "$R/each/invite-2.txt" --password-file "$R/each/invite-1.pw"
expect pw-each-needs-dir 1 'needs --out-dir' -- "$BIN" create --store "$R/store" --key "$T/key" \
	--server 192.0.2.1 --port 4433 --tunnel-net 10.9.0.0/24 --count 1 --password-each
expect text-on-argv-warns 0 'visible to other users' -- sh -c "'$BIN' show --password-file '$T/pw' \"\$(cat '$T/invite-1.txt')\""
expect help 0 'keygen --out KEY' -- "$BIN" --help
expect unknown-command 2 'unknown command' -- "$BIN" frobnicate
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
