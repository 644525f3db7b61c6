"""The wire protocol of include/vshare/proto.h for the Python tests: the
one place outside C where it is written down. check_vsproto.py compares
every constant and payload here with the header and with the table of
src/common/proto.c (through wire_table), so that this module cannot drift
from the C code.

Only the standard library is used: the hostile peers run it as another
user from a copy beside them."""
import select
import socket
import struct
import time

MAGIC = 0x52485356
VERSION_MIN = 1    # the oldest version the daemon still serves
VERSION = 9        # the daemon's own version (VS_PROTO_VERSION)
MAX_PAYLOAD = 1 << 20
LABEL_MAX = 64
UUID_LEN = 16
ERRMSG_MAX = 128

# Message types (VS_MSG_*), by the name after VS_MSG_.
T = dict(HELLO=0x1, ATTACH=0x2, FOOTPRINT=0x3, REQUEST=0x4, RELEASED=0x5,
         SWAPPED=0x6, WAIT_QUERY=0x8, TOOK=0x9, USAGE=0xa, UNSHARED=0xb,
         WELCOME=0x101, GRANT=0x102, DROP=0x103, MODE=0x104, ERROR=0x105,
         WAITING=0x106, POLICY=0x107, LOCK_PAGE=0x108,
         STATUS=0x201, SET_TQ=0x202, SET_MODE=0x203, SET_SLICE=0x204,
         SET_POLICY=0x205, SET_WEIGHT=0x206, METRICS=0x207, SET_NAME=0x208,
         REPLY=0x301)
NAME = {v: k for k, v in T.items()}

# Status codes (VS_OK, VS_E_*).
E = dict(OK=0, PROTO=-71, VERSION=-95, PERM=-1, NOGPU=-2, INVAL=-22,
         STATE=-16, LIMIT=-122, FULL=-28)
ROLE = dict(CLIENT=1, SCHEDULER=2, ADMIN=3)
MODE = dict(AUTO=0, ON=1, OFF=2)
POLICY = dict(FAIR=0, FCFS=1)
GRANT = dict(SHARED=0, EXCLUSIVE=1)
GRANTF = dict(OVERSUB=0x1, PACE=0x2)   # PACE since version 7
DROP = dict(QUANTUM=1, IDLE=2, MODE=3, CAPACITY=4)
POLICYF = dict(REQUIRE=0x1, INTERACTIVE=0x2)
CLASS = dict(BATCH=0, INTERACTIVE=1, MAX=1)     # latency classes (HELLO)
SETNAME = dict(CLEAR=0x1, LABEL_MAX=48, MAX=72)  # VS_NAME_*, SET_NAME
TARGET = dict(ALL=0x1, INDEX=0x2, UID=0x4)
UNSHARED = dict(ABSENT=1, LOST=2, MAX=2)         # VS_UNSHARED_* (UNSHARED)

# The lock page (version 5).
LOCK_PAGE_MAGIC = 0x4b4c5356
LOCK_SLOTS = 255
LOCK_CLOSED = 0
LOCK_OPEN_BIT = 1 << 62
LOCK_TOKEN_BIT = 1 << 63
LOCK_MARK_K1 = 0x9e3779b97f4a7c15


class Payload:
    """A C struct of the protocol: its fields in order, each (name,
    struct format). pack() takes the fields by name (missing ones zero),
    unpack() gives a dict; padding has the name None."""

    def __init__(self, *fields):
        self.fields = fields
        self.struct = struct.Struct("<" + "".join(f for _, f in fields))
        self.size = self.struct.size
        self.names = [n for n, f in fields if n is not None]

    def offset(self, name):
        fmt = "<"
        for n, f in self.fields:
            if n == name:
                return struct.calcsize(fmt)
            fmt += f
        raise KeyError(name)

    def pack(self, **values):
        out = []
        for n, f in self.fields:
            if n is None:
                continue
            zero = b"" if f.endswith("s") else 0
            out.append(values.pop(n, zero))
        if values:
            raise KeyError("no such field: %s" % ", ".join(values))
        return self.struct.pack(*out)

    def unpack(self, data):
        return dict(zip(self.names, self.struct.unpack(data[:self.size])))


UUID_F = ("uuid", "16s")
# One per struct vs_NAME of the header, by NAME.
S = dict(
    hdr=Payload(("magic", "I"), ("version", "H"), ("type", "H"),
                ("flags", "I"), ("length", "I")),
    hello=Payload(("proto_version", "I"), ("klass", "I"),
                  ("label", "64s")),
    attach=Payload(UUID_F, ("total_mem", "Q")),
    footprint=Payload(UUID_F, ("managed", "Q"), ("pinned", "Q")),
    gpu_ref=Payload(UUID_F),
    swapped=Payload(UUID_F, ("us", "Q"), ("bytes", "Q")),
    wait_query=Payload(UUID_F, ("flags", "I"), ("reserved", "I")),
    usage=Payload(UUID_F, ("busy_ms", "Q"), ("idle_ms", "Q"),
                  ("swapout_bytes", "Q"), ("swapout_us", "Q"),
                  ("flags", "I"), ("reserved", "I")),
    unshared=Payload(("ms", "Q"), ("reason", "I"), ("flags", "I")),
    welcome=Payload(("proto_version", "I"), ("client_id", "I")),
    grant=Payload(UUID_F, ("kind", "I"), ("flags", "I"), ("tq_ms", "I"),
                  ("reserved", "I")),
    drop=Payload(UUID_F, ("reason", "I"), ("reserved", "I")),
    mode=Payload(UUID_F, ("mode", "I"), ("reserved", "I")),
    error=Payload(("code", "i"), ("detail", "I"), ("msg", "128s")),
    policy=Payload(("mem_limit", "Q"), ("flags", "I"), ("weight", "I"),
                   ("reserved", "Q")),
    lock_slot=Payload(UUID_F, ("open", "Q"), ("prio", "I"), ("prio_n", "I"),
                      (None, "32x")),
    lock_page=Payload(("magic", "I"), ("n_slots", "I"), (None, "56x"),
                      ("slot", "%ds" % (64 * LOCK_SLOTS))),
    lock_word=Payload(("word", "Q"), ("busy", "Q"), ("seq", "I"),
                      ("sleepers", "I"), ("next", "Q"), (None, "32x")),
    lock_words=Payload(("w", "%ds" % (64 * LOCK_SLOTS)), (None, "64x")),
    lock_info=Payload(("token", "Q"), ("size", "I"), ("words", "I")),
    waiting=Payload(UUID_F, ("position", "I"), ("n_waiting", "I"),
                    ("gpu_index", "I"), ("n_holders", "I"),
                    ("holder_uid", "I"), ("reserved", "I"),
                    ("held_ms", "Q"), ("waited_ms", "Q"), ("eta_ms", "Q"),
                    ("holder_label", "64s")),
    status_req=Payload(("flags", "I"), ("reserved", "I")),
    admin_set=Payload(UUID_F, ("target", "I"), ("index", "I"),
                      ("value", "I"), ("reserved", "I")),
    set_name=Payload(("flags", "I"), ("reserved", "I"), ("label", "48s"),
                     ("name", "72s")),
    reply=Payload(("status", "i"), ("json_len", "I")),
)
HDR = S["hdr"].struct

# The payload of each message type (REPLY: its fixed part, text follows).
PAYLOAD = dict(HELLO="hello", ATTACH="attach", FOOTPRINT="footprint",
               REQUEST="gpu_ref", RELEASED="gpu_ref", SWAPPED="swapped",
               WAIT_QUERY="wait_query", TOOK="gpu_ref", USAGE="usage",
               UNSHARED="unshared", WELCOME="welcome",
               GRANT="grant", DROP="drop", MODE="mode", ERROR="error",
               WAITING="waiting", POLICY="policy", LOCK_PAGE="lock_info",
               STATUS="status_req", SET_TQ="admin_set",
               SET_MODE="admin_set", SET_SLICE="admin_set",
               SET_POLICY="admin_set", SET_WEIGHT="admin_set",
               METRICS="status_req", SET_NAME="set_name", REPLY="reply")

UUID = bytes.fromhex("00000000000000000000000000000001")


def frame(mtype, payload=b"", version=VERSION_MIN, magic=MAGIC, flags=0,
          length=None):
    """A frame of type mtype (a number, or a name of T) in a header of
    version (the oldest by default, which every daemon serves)."""
    if isinstance(mtype, str):
        mtype = T[mtype]
    n = len(payload) if length is None else length
    return HDR.pack(magic, version, mtype, flags, n) + payload


def hello(label=b"raw", version=VERSION_MIN):
    """A HELLO that asks for `version`, in a header of the oldest version
    (a test that wants another header builds the frame itself)."""
    return frame(T["HELLO"], S["hello"].pack(proto_version=version,
                                             label=label))


def attach(uuid=UUID, total=16 << 30):
    return frame(T["ATTACH"], S["attach"].pack(uuid=uuid, total_mem=total))


def gpu_ref(mtype, uuid=UUID):
    return frame(T[mtype], uuid)


def admin_set(mtype, value, target=TARGET["ALL"], uuid=bytes(16), index=0):
    return frame(T[mtype], S["admin_set"].pack(uuid=uuid, target=target,
                                               index=index, value=value))


def connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    return s


def recv_n(s, n):
    buf = b""
    while len(buf) < n:
        d = s.recv(n - len(buf))
        if not d:
            return None
        buf += d
    return buf


def recv_frame_v(s):
    """One frame (header version, type, payload), or None at EOF."""
    h = recv_n(s, HDR.size)
    if h is None:
        return None
    _, ver, mtype, _, n = HDR.unpack(h)
    return ver, mtype, recv_n(s, n)


def recv_frame(s):
    """One frame (type, payload), or None at EOF."""
    f = recv_frame_v(s)
    return None if f is None else f[1:]


def split_frames(buf):
    """The whole frames at the start of buf as [(type, payload)], and the
    bytes left after them."""
    out = []
    while len(buf) >= HDR.size:
        _, _, t, _, n = HDR.unpack(buf[:HDR.size])
        if len(buf) < HDR.size + n:
            break
        out.append((t, buf[HDR.size:HDR.size + n]))
        buf = buf[HDR.size + n:]
    return out, buf


def frames(s, n, timeout=30):
    """The next n frames on s as (type, payload); fewer at EOF or after
    timeout seconds."""
    out, buf = [], b""
    s.settimeout(timeout)
    end = time.monotonic() + timeout
    while len(out) < n and time.monotonic() < end:
        got, buf = split_frames(buf)
        out += got
        if len(out) >= n:
            break
        try:
            d = s.recv(65536)
        except OSError:
            break
        if not d:
            break
        buf += d
    return out[:n]


def error_of(payload):
    """An ERROR payload as (code, detail, text)."""
    code, detail = struct.unpack_from("<iI", payload)
    return code, detail, payload[8:].split(b"\0")[0].decode()


def errors_of(s, timeout):
    """ERROR frames (code, detail, text) read within timeout; and EOF?"""
    out, buf, eof = [], b"", False
    s.setblocking(False)
    end = time.monotonic() + timeout
    po = select.poll()
    po.register(s, select.POLLIN)
    while time.monotonic() < end:
        if not po.poll(max(0, end - time.monotonic()) * 1000):
            break
        try:
            d = s.recv(65536)
        except (ConnectionResetError, BlockingIOError):
            d = b""
        if not d:
            eof = True
            break
        buf += d
        got, buf = split_frames(buf)
        out += [error_of(p) for t, p in got if t == T["ERROR"]]
    return out, eof
