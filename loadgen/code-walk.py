#!/usr/bin/env python3
"""Which code of a running gateway is resident, by crate (issue #77, BENCHMARKS.md).

Usage: code-walk.py PID [TOP]   (as root: /proc/PID/pagemap needs CAP_SYS_ADMIN for PFNs,
                                  but the present bit this reads is given to the owner too)

An idle gateway's file-backed RSS is mostly its own code: the kernel maps up to 64 KiB
around every code fault, so code touched once at start stays resident. This tells which
code that is:

- finds the executable mapping of the binary in /proc/PID/maps;
- asks /proc/PID/pagemap which of its 4 KiB pages are present;
- reads the binary's symbols (`nm --defined-only -n -C`, so the binary must not be
  stripped: the release profile keeps its symbols) and gives each resident page to the
  symbols whose code lies in it, by the symbol's crate (the first path segment of its
  demangled name; `<T as Trait>` impls by T's crate), shares split by bytes;
- prints resident KiB by crate, most first, and the total.

Run it on the release binary 10 s after start (`switchboard-loadgen idle` waits that long).
"""
import collections
import re
import struct
import subprocess
import sys

PAGE = 4096


def mapping(pid):
    """(start, end, offset, path) of the binary's executable mapping."""
    exe = subprocess.run(["readlink", f"/proc/{pid}/exe"], capture_output=True, text=True).stdout.strip()
    with open(f"/proc/{pid}/maps") as maps:
        for line in maps:
            parts = line.split()
            if len(parts) >= 6 and parts[5] == exe and "x" in parts[1]:
                start, end = (int(x, 16) for x in parts[0].split("-"))
                return start, end, int(parts[2], 16), exe
    sys.exit(f"no executable mapping of {exe} in process {pid}")


def present_pages(pid, start, end):
    """Addresses of the present pages in [start, end)."""
    pages = []
    with open(f"/proc/{pid}/pagemap", "rb") as pagemap:
        pagemap.seek(start // PAGE * 8)
        data = pagemap.read((end - start) // PAGE * 8)
    for i in range(len(data) // 8):
        (entry,) = struct.unpack_from("<Q", data, i * 8)
        if entry >> 63 & 1:
            pages.append(start + i * PAGE)
    return pages


def text_base(path):
    """The file offset and virtual address of the executable segment (for PIE binaries)."""
    out = subprocess.run(["readelf", "-lW", path], capture_output=True, text=True).stdout
    for line in out.splitlines():
        fields = line.split()
        if fields[:1] == ["LOAD"] and "E" in fields[6:8]:
            return int(fields[1], 16), int(fields[2], 16)
    sys.exit("no executable LOAD segment")


CRATE = re.compile(r"^(?:<(?:&(?:mut )?)?(?:dyn )?)?([A-Za-z_][A-Za-z0-9_]*)(?:::|<|$)")


def crate_of(name):
    m = CRATE.match(name)
    return m.group(1) if m else "?"


def symbols(path):
    """(address, crate) of every code symbol, sorted."""
    out = subprocess.run(["nm", "--defined-only", "-n", "-C", path], capture_output=True, text=True).stdout
    syms = []
    for line in out.splitlines():
        parts = line.split(" ", 2)
        if len(parts) == 3 and parts[1] in "tTwW":
            syms.append((int(parts[0], 16), crate_of(parts[2])))
    if not syms:
        sys.exit("the binary has no symbols (stripped?)")
    return syms


def main():
    pid = int(sys.argv[1])
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 25
    start, end, offset, path = mapping(pid)
    seg_offset, seg_vaddr = text_base(path)
    # The load bias: a runtime address minus the link-time one.
    bias = start - offset - (seg_vaddr - seg_offset)
    resident = present_pages(pid, start, end)
    syms = symbols(path)
    addrs = [a for a, _ in syms]
    by_crate = collections.Counter()
    import bisect

    for page in resident:
        lo, hi = page - bias, page - bias + PAGE
        i = max(bisect.bisect_right(addrs, lo) - 1, 0)
        covered = collections.Counter()
        while i < len(syms) and syms[i][0] < hi:
            s_start = max(syms[i][0], lo)
            s_end = min(syms[i + 1][0] if i + 1 < len(syms) else hi, hi)
            if s_end > s_start:
                covered[syms[i][1]] += s_end - s_start
            i += 1
        total = sum(covered.values()) or 1
        if not covered:
            by_crate["(no symbol)"] += PAGE
        for crate, n in covered.items():
            by_crate[crate] += PAGE * n / total
    print(f"{path}: {len(resident) * PAGE / 1024:.0f} KiB of {(end - start) / 1024:.0f} KiB code resident")
    for crate, n in by_crate.most_common(top):
        print(f"{n / 1024:10.0f} KiB  {crate}")


if __name__ == "__main__":
    main()
