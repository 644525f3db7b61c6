#!/bin/sh
# The shim must load into containers with glibc 2.28 (UBI8): no symbol it
# imports may need a newer GLIBC_ version.
# Usage: check_glibc.sh libvshare.so
set -eu
lib=$1
max=2.28
versions=$(objdump -T "$lib" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -u)
[ -n "$versions" ] || { echo "no GLIBC_ versions found in $lib"; exit 1; }
bad=0
for v in $versions; do
	newest=$(printf '%s\n%s\n' "$v" "$max" | sort -V | tail -n1)
	if [ "$newest" != "$max" ]; then
		echo "needs GLIBC_$v:"
		objdump -T "$lib" | grep "GLIBC_$v[^.0-9]" || true
		bad=1
	fi
done
[ $bad -eq 0 ] && echo "glibc versions used: $(echo $versions)"
exit $bad
