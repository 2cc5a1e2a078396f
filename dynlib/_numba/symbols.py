"""Loading cached object code safely: the symbols it uses resolve before it is loaded.

Before it loads a cached function, numba refreshes its whole target context: it imports
every lowering module (numba.np.arraymath among them, whose BLAS check imports scipy.linalg),
initialises its runtime (NRT) and rebuilds the typing tables, about 0.3 s of every short `dyn`
run. Numba added that refresh (numba PR #2202, "target context not init'ed when loading from
cache") because object code loaded into an uninitialised context can name symbols the JIT
linker does not know yet (the runtime's ``NRT_*`` functions, the hash secret of
numba.cpython.hashing, those of extensions); LLVM then aborts the process ("Program used
external function ... which could not be resolved"). dyn's loader (`dynlib._numba.entries`)
does the part of the refresh that loading needs: `symbols_ready` reads the undefined symbols
of the cached object code (ELF, `undefined_symbols`) and makes sure every one resolves before
the code is loaded, initialising the runtime when only ``NRT_*`` symbols are missing and doing
numba's full refresh for anything else, for object-mode code, or for an object file it cannot
read (another platform). Compiling is unchanged: numba refreshes before it compiles.
"""
_refreshed = []


def symbols_ready(payload, target_context, stats):
    """Make every symbol the cached object code uses resolvable before it is loaded
    (see the module docstring); False when that cannot be done (then it is compiled). A full
    refresh is counted in ``stats['refreshes']``."""
    import llvmlite.binding as ll

    try:
        (_, kind, data), objectmode, lifted = payload[0], payload[4], payload[5]
        obj = data[0] if kind == "object" and not objectmode and not lifted else None
    except (TypeError, ValueError, IndexError):
        obj = None
    needed = None if obj is None else undefined_symbols(obj)
    if needed is None:  # nothing dyn can read: numba's full refresh, as numba's own loading does
        _refresh(target_context, stats)
        return True
    missing = [s for s in needed if not ll.address_of_symbol(s)]
    if missing and all(s.startswith("NRT_") for s in missing):
        from numba.core.runtime import rtsys

        rtsys.initialize(target_context)
        missing = [s for s in missing if not ll.address_of_symbol(s)]
    if missing:
        _refresh(target_context, stats)
        missing = [s for s in missing if not ll.address_of_symbol(s)]
    return not missing


def _refresh(target_context, stats):
    if not _refreshed:
        stats["refreshes"] += 1
        target_context.refresh()
        _refreshed.append(True)


def undefined_symbols(obj):
    """The names an ELF64 little-endian object file uses but does not define, or None
    for any other format."""
    table = _symbol_table(obj)
    return None if table is None else [name for name, kind, shndx in table if shndx == 0]


def defined_symbols(obj):
    """The names an ELF64 little-endian object file defines (its functions and data, global and local, not
    its section and file names), as a set, or None for any other format (`dynlib._numba.linking`)."""
    table = _symbol_table(obj)
    return None if table is None else {name for name, kind, shndx in table if shndx != 0 and kind not in (3, 4)}


def _symbol_table(obj):
    """[(name, type, section index)] of the named symbols of an ELF64 little-endian object file (type:
    STT_*, 3 a section, 4 a file; section index 0: undefined), or None for any other format."""
    if obj[:6] != b"\x7fELF\x02\x01":
        return None
    import struct

    try:
        shoff, = struct.unpack_from("<Q", obj, 0x28)
        shentsize, shnum = struct.unpack_from("<HH", obj, 0x3A)
        sections = [struct.unpack_from("<IIQQQQIIQQ", obj, shoff + i * shentsize) for i in range(shnum)]
        table = []
        for _, kind, _, _, offset, size, link, _, _, entsize in sections:
            if kind != 2 or not entsize:  # SHT_SYMTAB
                continue
            strings = sections[link][4]
            for at in range(offset + entsize, offset + size, entsize):  # entry 0 is the null symbol
                name, info, _, shndx = struct.unpack_from("<IBBH", obj, at)
                if name:
                    start = strings + name
                    table.append((obj[start:obj.index(b"\0", start)].decode(), info & 0xF, shndx))
        return table
    except (struct.error, ValueError, IndexError, UnicodeDecodeError):
        return None
