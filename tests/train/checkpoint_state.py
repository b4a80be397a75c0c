"""Compares two poslab checkpoints (LibTorch's zip archives, as train/checkpoint.cpp writes them) value by value,
each tensor bit for bit, with no LibTorch: data.pkl read with a stand-in for each class it names, each tensor's bytes
taken from its storage's entry. Prints each value that differs (or that one holds and the other not) and exits 1;
exits 0 when every value but those left out is equal. A checkpoint that cannot be read is named, exit 2.
Usage: python3 tests/train/checkpoint_state.py A.pt B.pt [NAME_TO_LEAVE_OUT ...]
       python3 tests/train/checkpoint_state.py --list A.pt
       (each value: its name, and a tensor's dtype and shape, with its elements when it is small)
"""
import pickle
import re
import struct
import sys
import zipfile

ITEM_SIZE = {"Long": 8, "Int": 4, "Short": 2, "Char": 1, "Byte": 1, "Bool": 1, "Float": 4, "Double": 8,
             "Half": 2, "BFloat16": 2}
UNPACK = {"Long": "q", "Int": "i", "Short": "h", "Char": "b", "Byte": "B", "Bool": "?", "Float": "f", "Double": "d"}


class Archive(dict):
    """A scripted module's attributes (OutputArchive writes each value as one)."""

    def __setstate__(self, state):
        self.update(state)


class Tensor:
    def __init__(self, storage, offset, size, stride, *rest):
        (_, kind, self.key, _, _), self.offset, self.size, self.stride = storage, offset, tuple(size), tuple(stride)
        self.dtype = kind.__name__[: -len("Storage")]


def storage_class(name):
    return type(name, (), {})


class Unpickler(pickle.Unpickler):
    def find_class(self, module, name):
        if module.startswith("__torch__"):
            return Archive
        if module == "torch._utils" and name == "_rebuild_tensor_v2":
            return Tensor
        if module == "torch" and name.endswith("Storage"):
            return storage_class(name)
        if module == "collections" and name == "OrderedDict":
            return dict
        raise pickle.UnpicklingError(f"data.pkl names {module}.{name}, which this reader does not know")

    def persistent_load(self, pid):
        return pid


def values(path):
    """{dotted name: (dtype, shape, stride, bytes of the elements it spans) for a tensor, the value itself otherwise}.
    The optimizer's state is keyed by each parameter's address in the process that wrote it (LibTorch's
    serialisation); its names here say the parameter's place in the param groups instead."""
    with zipfile.ZipFile(path) as z:
        root = next(n for n in z.namelist() if n.endswith("/data.pkl"))[: -len("data.pkl")]
        top = Unpickler(z.open(root + "data.pkl")).load()
        out = {}

        def walk(prefix, value):
            if isinstance(value, Archive):
                for k, v in value.items():
                    walk(f"{prefix}{k}.", v)
            elif isinstance(value, Tensor):
                if value.dtype not in ITEM_SIZE:
                    raise ValueError(f"{prefix[:-1]}: a tensor of {value.dtype}, "
                                     "an element size this reader does not know")
                item = ITEM_SIZE[value.dtype]
                n = 1 + sum((s - 1) * st for s, st in zip(value.size, value.stride)) if all(value.size) else 0
                body = z.read(f"{root}data/{value.key}")[value.offset * item:(value.offset + n) * item]
                out[prefix[:-1]] = (value.dtype, value.size, value.stride, body)
            else:
                out[prefix[:-1]] = repr(value)

        walk("", top)
    place = {}  # address -> group/index
    for name, v in out.items():
        m = re.fullmatch(r"(.*)param_groups/(\d+)\.params/(\d+)", name)
        if m and isinstance(v, str):  # '0x55d0c0a1b2c0' (LibTorch 1.x) or 94363527344832 (2.x)
            place[v.strip("'")] = f"{m[2]}/{m[3]}"
    renamed = {}
    for name, v in out.items():
        m = re.fullmatch(r"(.*\.state\.)([^.]+)(\..*)", name)
        if m and m[2] in place:
            name = m[1] + place[m[2]] + m[3]
        elif isinstance(v, str) and v.strip("'") in place:
            v = place[v.strip("'")]
        renamed[name] = v
    return renamed


def shown(t):
    if not isinstance(t, tuple):
        return t
    dtype, size, _, body = t
    if dtype in UNPACK and len(body) <= 8 * ITEM_SIZE[dtype]:
        elements = struct.unpack("<%d%s" % (len(body) // ITEM_SIZE[dtype], UNPACK[dtype]), body)
        return f"{dtype} {list(size)} {list(elements)}"
    return f"{dtype} {list(size)}"


def elements(a, b):
    """", K of N elements" where two tensors of one dtype and shape differ in their elements."""
    if not (isinstance(a, tuple) and isinstance(b, tuple) and a[:3] == b[:3] and a[0] in ITEM_SIZE):
        return ""
    item = ITEM_SIZE[a[0]]
    n = len(a[3]) // item
    k = sum(a[3][i * item:(i + 1) * item] != b[3][i * item:(i + 1) * item] for i in range(n))
    return f", {k} of {n} elements"


def read(path):
    try:
        return values(path)
    except (OSError, zipfile.BadZipFile, pickle.UnpicklingError, StopIteration, ValueError, KeyError) as e:
        print(f"checkpoint_state.py: cannot read {path} as a poslab checkpoint: {e or 'no data.pkl'}", file=sys.stderr)
        sys.exit(2)


def main(argv):
    if argv[:1] == ["--list"] and len(argv) == 2:
        for name, t in read(argv[1]).items():
            print(name, shown(t))
        return 0
    if len(argv) < 2 or argv[0].startswith("--"):
        print(__doc__[__doc__.index("Usage:"):].rstrip(), file=sys.stderr)
        return 2
    a, b = read(argv[0]), read(argv[1])
    leave_out = set(argv[2:])
    differ = [n for n in sorted(a.keys() | b.keys()) if n not in leave_out and a.get(n) != b.get(n)]
    for n in differ:
        left, right = shown(a[n]) if n in a else "absent", shown(b[n]) if n in b else "absent"
        print(f"differs: {n}: {left} / {right}{elements(a.get(n), b.get(n))}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
