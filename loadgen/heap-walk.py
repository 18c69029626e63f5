#!/usr/bin/env python3
"""What keeps a running gateway's freed heap resident (issue #19, BENCHMARKS.md "Round two,
seventh pass").

Usage: heap-walk.py PID   (as root, or as the gateway's user with ptrace allowed)

heaptrack tells what is live; this tells which live chunks keep pages resident that are
otherwise free, so `malloc_trim` cannot return them. It reads the process from outside,
without stopping it, so run it while the gateway is quiet (after a burst has retired):

- finds glibc's arenas in /proc/PID/maps: the main heap (`[heap]`) and the thread arenas
  (anonymous read-write mappings aligned to 64 MiB);
- walks each arena's chunks through /proc/PID/mem (size field, and the next chunk's
  in-use bit; chunks cached in tcache count as in use);
- asks /proc/PID/pagemap which of its pages are resident;
- per arena prints chunks, bytes in use, resident bytes, resident pages with less than
  1 KiB live ("sparse") and resident pages with nothing live;
- counts the chunks a thread's tcache holds (free, but in use to the arena) on those
  pages, and the pages nothing else keeps;
- then groups the small live chunks on sparse pages by their first bytes (digits folded),
  most frequent first, with one example each: a string that repeats hundreds of times names
  its owner.

Written for glibc 2.36 on x86-64 (heap_info 48 bytes, malloc_state 2,200); the start of a
thread arena's first chunk is searched near there, so nearby versions work too.
"""
import collections
import re
import struct
import sys

PAGE = 4096
HEAP_ALIGN = 64 << 20
HEAP_INFO = 48
MALLOC_STATE = 2200


def main(pid):
    mem = open(f"/proc/{pid}/mem", "rb", 0)
    pagemap = open(f"/proc/{pid}/pagemap", "rb", 0)

    def read(addr, n):
        mem.seek(addr)
        return mem.read(n)

    def word(addr):
        return struct.unpack("<Q", read(addr, 8))[0]

    def resident(page):
        pagemap.seek(page * 8)
        return bool(struct.unpack("<Q", pagemap.read(8))[0] >> 63)

    def walk(start, end):
        chunks, at = [], start
        while at + 16 <= end:
            size = word(at + 8) & ~7
            if size < 32 or at + size > end:
                break
            chunks.append((at, size))
            at += size
        return chunks, at

    regions = []
    for line in open(f"/proc/{pid}/maps"):
        parts = line.split()
        lo, hi = (int(x, 16) for x in parts[0].split("-"))
        name = parts[5] if len(parts) > 5 else ""
        if parts[1].startswith("rw") and (name == "[heap]" or (not name and lo % HEAP_ALIGN == 0)):
            regions.append((lo, hi, name))

    sizes, samples, sparse_pages = collections.Counter(), [], []
    for lo, hi, name in regions:
        if name == "[heap]":
            candidates = [lo + off for off in range(0, 64, 16)]
        else:
            first = word(lo) == lo + HEAP_INFO
            base = lo + HEAP_INFO + (MALLOC_STATE if first else 0)
            candidates = [base + off for off in range(-64, 256, 8)]
        chunks, _ = max((walk(c, hi) for c in candidates), key=lambda w: (w[1], len(w[0])))
        if len(chunks) < 2:
            continue
        used = [chunks[i] for i in range(len(chunks) - 1) if word(chunks[i + 1][0] + 8) & 1]
        live = collections.defaultdict(int)
        on_page = collections.defaultdict(list)
        for at, size in used:
            a = at
            while a < at + size:
                page = a // PAGE
                upto = min((page + 1) * PAGE, at + size)
                live[page] += upto - a
                on_page[page].append((at, size))
                a = upto
        pages = [p for p in range(lo // PAGE, hi // PAGE) if resident(p)]
        sparse = [p for p in pages if 0 < live.get(p, 0) < 1024]
        empty = [p for p in pages if live.get(p, 0) == 0]
        print(
            f"{name or hex(lo)}: {len(chunks)} chunks, {len(used)} in use "
            f"({sum(s for _, s in used) / 1e6:.2f} MB), resident {len(pages) * PAGE / 1e6:.2f} MB, "
            f"sparse pages {len(sparse)}, resident pages with nothing live {len(empty)}"
        )
        sparse_pages += [on_page[page] for page in sparse]
        for page in sparse:
            for at, size in on_page[page]:
                if size <= 1024:
                    sizes[size] += 1
                    samples.append((at, size))

    print("chunk sizes on sparse pages:", sizes.most_common(12))

    # A chunk cached in a thread's tcache is free but marked in use; its second word holds
    # the process's tcache key, the same value in every cached chunk. The most frequent
    # second word among the small chunks on sparse pages is that key when tcache holds many.
    keys = collections.Counter(word(at + 24) for at, _ in samples)
    key, cached = keys.most_common(1)[0] if keys else (0, 0)
    if cached > 1 and key != 0:
        only = sum(1 for chunks in sparse_pages if all(word(at + 24) == key for at, _ in chunks))
        print(
            f"tcache (free, kept per thread; key {key:#x}): {cached} chunks on sparse pages, "
            f"{only} pages kept by them alone"
        )
    kinds, example = collections.Counter(), {}
    for at, size in samples:
        text = re.sub(rb"[^\x20-\x7e]", b".", read(at + 16, min(size - 16, 48))).decode()
        kind = re.sub(r"[0-9]", "9", text)
        kinds[kind] += 1
        example.setdefault(kind, (hex(at), size, text))
    for kind, n in kinds.most_common(30):
        print(n, *example[kind])


if __name__ == "__main__":
    main(int(sys.argv[1]))
