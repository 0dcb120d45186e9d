"""Nothing of a code-sandbox run outlives it: a later run of the same slot can observe nothing.

For each channel a run could leave state in (SysV shared memory, semaphores and message queues,
POSIX message queues, files in ``/dev/shm`` and ``/tmp``, an abstract Unix socket, a kernel key,
and the slot's network namespace: a loopback TCP connection in ``TIME_WAIT``, inet and unix
sockets a daemon holds, a unix socket that holds itself, all read from ``/proc/net``),
a *writer* candidate tries to leave a note and a later *reader* candidate passes its test only if
it reads that note. Both run in the one slot of a ``concurrency: 1`` pool, and the slot does not
restart in between (a restart would hand the reader fresh namespaces and prove nothing). The
reader must fail; the writer scores as its tests say (it solves the task whatever its calls
answer); honest and wrong siblings keep their scores; the batches never fail under the default
``onError: raise``.

Runs get fresh uids, never one an earlier run of the slot had; a uid comes back only when a uid
block does (after many slot restarts, or in a later process claiming the same span). The
``equal`` cases hand every run the same uids to cover that too.

The answer the tests expect is drawn per test and reaches only the writer's program and the tests
(which a candidate never sees), so a reader that passes has read the writer's note.

Needs root, bubblewrap and a writable pids cgroup (CI has all three).
"""

from __future__ import annotations

import ctypes
import os
import secrets
import stat
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest

import rewardkit
from rewardkit_rl.code import sandbox

GROUP = 3  # writer or reader, beside one honest and one wrong sibling
_KEYCTL = 250  # x86-64; aarch64 uses 219 (only for cleaning up after a failing run on old code)
_KEYCTL_INVALIDATE = 21

# Reads every socket table of the namespace (what `ss -a` and `netstat` list) for a note: a port
# NOTE + PORT_OFFSET in the inet tables, or a unix socket named NAME-NOTE.
READ_NET_TABLES = """
for table in ("tcp", "tcp6", "udp", "udp6", "raw", "raw6"):
    try:
        with open("/proc/net/" + table) as handle:
            rows = handle.read().splitlines()[1:]
    except OSError:
        continue
    for row in rows:
        for address in row.split()[1:3]:  # local and remote "address:port", the port in hex
            port = int(address.rsplit(":", 1)[1], 16)
            if 1000 <= port - PORT_OFFSET <= 31000:
                note = str(port - PORT_OFFSET)
with open("/proc/net/unix") as handle:
    for row in handle:
        if NAME + "-" in row:
            note = row.split(NAME + "-", 1)[1].split("-")[0].split()[0]
"""

# Each channel: (code that leaves NOTE under NAME, code that sets `note` from it), both inside
# a `try` so a refused call (OSError, ctypes' -1) is the program's own business. The programs
# get LIBC (ctypes libc with errno), NAME (a token unique to the test), KEY (a SysV key from it)
# and, in the writer, NOTE (the answer, as a decimal string).
CHANNELS: dict[str, tuple[str, str]] = {
    "sysv_shm": (
        """
shmid = LIBC.shmget(KEY, 4096, 0o1666)
address = LIBC.shmat(shmid, None, 0)
if address not in (None, ctypes.c_void_p(-1).value):  # a refused shmat answers (void *) -1
    ctypes.memmove(address, NOTE.encode() + b"\\0", len(NOTE) + 1)
""",
        """
shmid = LIBC.shmget(KEY, 0, 0)
address = LIBC.shmat(shmid, None, 0o10000)  # SHM_RDONLY
if address not in (None, ctypes.c_void_p(-1).value):
    note = ctypes.string_at(address).decode()
""",
    ),
    "sysv_sem": (
        """
semid = LIBC.semget(KEY, 1, 0o1666)
LIBC.semctl(semid, 0, 16, int(NOTE))  # SETVAL
""",
        """
semid = LIBC.semget(KEY, 1, 0)
if semid >= 0:
    note = str(LIBC.semctl(semid, 0, 12))  # GETVAL
""",
    ),
    "sysv_msg": (
        """
msqid = LIBC.msgget(KEY, 0o1666)
message = ctypes.create_string_buffer(ctypes.sizeof(ctypes.c_long) + 64)
ctypes.memmove(ctypes.addressof(message), (1).to_bytes(8, "little"), 8)
ctypes.memmove(ctypes.addressof(message) + 8, NOTE.encode(), len(NOTE))
LIBC.msgsnd(msqid, message, len(NOTE), 0)
""",
        """
msqid = LIBC.msgget(KEY, 0)
message = ctypes.create_string_buffer(8 + 64)
size = LIBC.msgrcv(msqid, message, 64, 0, 0o4000)  # IPC_NOWAIT
if size > 0:
    note = message.raw[8 : 8 + size].decode()
""",
    ),
    "posix_mq": (
        """
os.umask(0)
queue = LIBC.mq_open(("/" + NAME).encode(), os.O_CREAT | os.O_RDWR, 0o666, None)
LIBC.mq_send(queue, NOTE.encode(), len(NOTE), 0)
""",
        """
queue = LIBC.mq_open(("/" + NAME).encode(), os.O_RDONLY | os.O_NONBLOCK)
message = ctypes.create_string_buffer(1 << 16)
size = LIBC.mq_receive(queue, message, 1 << 16, None)
if size > 0:
    note = message.raw[:size].decode()
""",
    ),
    "dev_shm_file": (
        """
os.umask(0)
with open("/dev/shm/" + NAME, "w") as handle:
    handle.write(NOTE)
""",
        """
with open("/dev/shm/" + NAME) as handle:
    note = handle.read()
""",
    ),
    "tmp_file": (
        """
os.umask(0)
os.chmod(".", 0o777)  # the run's own work dir: open it to everyone
for path in ("/tmp/" + NAME, NAME):
    try:
        with open(path, "w") as handle:
            handle.write(NOTE)
    except OSError:
        pass
""",
        """
import glob
places = ["/tmp/" + NAME, *glob.glob("/tmp/*/" + NAME)]
places += [f"/tmp/{kind}-{number}/{NAME}" for kind in ("run", "tests") for number in range(1, 400)]
for path in places:
    try:
        with open(path) as handle:
            note = handle.read()
        break
    except OSError:
        pass
""",
    ),
    "abstract_socket": (
        """
import socket
server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
server.bind("\\0" + NAME)
server.listen()
if os.fork() == 0:  # a daemon that hands the note to whoever asks, for as long as it lives
    os.setsid()
    while True:
        connection, _ = server.accept()
        connection.sendall(NOTE.encode())
        connection.close()
server.close()
""",
        """
import socket
client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
client.settimeout(1.0)
client.connect("\\0" + NAME)
note = client.recv(64).decode()
""",
    ),
    "keyring": (
        """
LIBC.syscall.restype = ctypes.c_long
KEYCTL = {"x86_64": 250, "aarch64": 219}[os.uname().machine]
ADD_KEY = {"x86_64": 248, "aarch64": 217}[os.uname().machine]
serial = LIBC.syscall(ADD_KEY, b"user", NAME.encode(), NOTE.encode(), len(NOTE), ctypes.c_long(-4))
LIBC.syscall(KEYCTL, 5, ctypes.c_long(serial), ctypes.c_long(0x3F3F3F3F))  # SETPERM: all to all
""",
        """
LIBC.syscall.restype = ctypes.c_long
KEYCTL = {"x86_64": 250, "aarch64": 219}[os.uname().machine]
serials = [LIBC.syscall(KEYCTL, 10, ctypes.c_long(-4), b"user", NAME.encode(), 0)]  # SEARCH @u
with open("/proc/keys") as handle:  # keys of other uids that let everyone view them
    serials += [int(line.split()[0], 16) for line in handle if NAME in line]
for serial in serials:
    buffer = ctypes.create_string_buffer(64)
    size = LIBC.syscall(KEYCTL, 11, ctypes.c_long(serial), buffer, 64)  # READ
    if 0 < size <= 64:
        note = buffer.raw[:size].decode()
        break
""",
    ),
    # The slot's network namespace serves run after run: a writer leaves its note as a port
    # (NOTE + PORT_OFFSET, below the ephemeral range) or a socket name that lingers there.
    "tcp_time_wait": (
        """
import socket
server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("127.0.0.1", int(NOTE) + PORT_OFFSET))
server.listen()
client = socket.create_connection(("127.0.0.1", int(NOTE) + PORT_OFFSET))
connection, _ = server.accept()
connection.close()  # the side that closes first keeps the connection in TIME_WAIT for a minute
client.close()
server.close()
""",
        READ_NET_TABLES,
    ),
    "tcp6_time_wait": (
        """
import socket
server = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("::1", int(NOTE) + PORT_OFFSET))
server.listen()
client = socket.create_connection(("::1", int(NOTE) + PORT_OFFSET))
connection, _ = server.accept()
connection.close()
client.close()
server.close()
""",
        READ_NET_TABLES,
    ),
    "inet_daemons": (
        """
import socket
held = []
for family, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
    for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
        try:
            held.append(socket.socket(family, kind))
            held[-1].bind((host, int(NOTE) + PORT_OFFSET))
            if kind == socket.SOCK_STREAM:
                held[-1].listen()
        except OSError:
            pass
if os.fork() == 0:  # a daemon that keeps listening sockets open for as long as it lives
    import time
    os.setsid()
    while True:
        time.sleep(60)
""",
        READ_NET_TABLES,
    ),
    "unix_socket_names": (
        """
import socket
named = NAME + "-" + NOTE
held = []
for address in ("\\0" + named, named):  # abstract, and a path in the run's own work dir
    held.append(socket.socket(socket.AF_UNIX, socket.SOCK_STREAM))
    held[-1].bind(address)
    held[-1].listen()
if os.fork() == 0:  # a daemon that keeps the named sockets open for as long as it lives
    import time
    os.setsid()
    while True:
        time.sleep(60)
""",
        READ_NET_TABLES,
    ),
    "unix_socket_cycle": (
        # A socket that holds itself (its own descriptor in flight in its queue) has no owner
        # once every descriptor is closed: only the kernel's unix garbage collector frees it, and
        # that runs when some unix socket is released, anywhere on the host, after the cycle.
        """
import socket
named = NAME + "-" + NOTE
cycle = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
cycle.bind("\\0" + named)
sender = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
sender.connect("\\0" + named)
socket.send_fds(sender, [b"x"], [cycle.fileno()])
sender.close()
cycle.close()
""",
        READ_NET_TABLES,
    ),
}

PRELUDE = """
import ctypes, os
LIBC = ctypes.CDLL(None, use_errno=True)
LIBC.shmat.restype = ctypes.c_void_p
NAME = {name!r}
KEY = {key}
PORT_OFFSET = 1024
"""


def writer_program(channel: str, name: str, note: int) -> str:
    leave, _ = CHANNELS[channel]
    return (
        PRELUDE.format(name=name, key=_sysv_key(name))
        + f"NOTE = {str(note)!r}\n"
        + "try:\n"
        + _indent(leave)
        + "except Exception:\n    pass\n"
        + f"def answer():\n    return {note}\n"
    )


def reader_program(channel: str, name: str) -> str:
    _, read = CHANNELS[channel]
    return (
        PRELUDE.format(name=name, key=_sysv_key(name))
        + "note = ''\n"
        + "try:\n"
        + _indent(read)
        + "except Exception:\n    pass\n"
        + "def answer():\n    return int(note) if note.strip().isdigit() else -1\n"
    )


def _indent(code: str) -> str:
    return "".join(f"    {line}\n" for line in code.strip("\n").splitlines())


def _sysv_key(name: str) -> int:
    return int(name[-7:], 16) or 1


def _config() -> dict[str, Any]:
    params = {"cgroup": "required", "concurrency": 1, "timeout_s": 4.0, "memory_mb": 512}
    return {"rl": {"reward": {"provider": "code-tests", "params": params}, "group_size": GROUP}}


def _group(group_id: str, program: str, answer: object) -> dict[str, Any]:
    reference = {"test_list": [f"assert answer() == {answer}"]}
    programs = {
        "subject": program,
        "honest": f"def answer():\n    return {answer}\n",
        "wrong": "def answer():\n    return -1\n",
    }
    return {
        "group_id": group_id,
        "rollouts": [
            {"trajectory_id": role, "completion": f"```python\n{code}```", "reference": reference}
            for role, code in programs.items()
        ],
    }


def _finals(batch: Any) -> dict[str, float | None]:
    return {candidate.trajectory_id: candidate.final for _, candidate in batch.candidates()}


def _same_uids(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every run of the slot gets the first uids of its block, as a run does that gets a uid an
    earlier run had once its block comes back."""
    fresh_uids = sandbox.Slot._fresh_uids

    def first_uids(slot: sandbox.Slot, count: int) -> list[int] | None:
        uids = fresh_uids(slot, count)
        return None if uids is None or slot.uids is None else list(slot.uids[:count])

    monkeypatch.setattr(sandbox.Slot, "_fresh_uids", first_uids)


@pytest.fixture(params=["different", "equal"])
def uids(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "equal":
        _same_uids(monkeypatch)
    return str(request.param)


@pytest.fixture
def reward(uids: str) -> Iterator[Any]:
    with rewardkit.load(_config()) as loaded:
        yield loaded


def _the_slot(reward: Any) -> sandbox.Slot:
    [bound] = reward.worker.providers.values()
    [slot] = bound.provider._pool._slots
    return slot


@pytest.fixture
def name() -> Iterator[str]:
    token = f"rk-note-{secrets.token_hex(6)}"
    yield token
    _invalidate_keys(token)


def _invalidate_keys(name: str) -> None:
    """Remove keys a writer left on the host (only where the filter failed to refuse them)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    with open("/proc/keys", encoding="ascii", errors="replace") as handle:
        serials = [int(line.split()[0], 16) for line in handle if name in line]
    for serial in serials:
        libc.syscall(ctypes.c_long(_KEYCTL), ctypes.c_long(_KEYCTL_INVALIDATE), ctypes.c_long(serial))


@pytest.mark.parametrize("channel", sorted(CHANNELS))
def test_a_later_run_in_the_same_slot_cannot_read_a_note_an_earlier_run_left(
    reward: Any, uids: str, name: str, channel: str
) -> None:
    answer = 1000 + secrets.randbelow(30000)  # fits a SysV semaphore (at most 32767)
    written = reward.score([_group("writer", writer_program(channel, name, answer), answer)])
    slot = _the_slot(reward)
    starts, last_uids = slot.starts, slot._used_uids
    read = reward.score([_group("reader", reader_program(channel, name), answer)])
    # the reader ran in the slot the writer ran in, with nothing restarted in between
    assert slot.starts == starts == 1
    assert slot._used_uids > last_uids
    assert _finals(written) == {"subject": 1.0, "honest": 1.0, "wrong": 0.0}
    assert _finals(read) == {"subject": 0.0, "honest": 1.0, "wrong": 0.0}, f"{channel}: the note got through"


def test_the_socket_table_reader_finds_unix_socket_names_left_in_its_own_run(reward: Any, name: str) -> None:
    # The control for the unix channels above, which pass on the old sandbox too: within one run
    # the reader finds the names the writer's daemon holds, so a later run that finds nothing
    # found nothing because nothing was left, not because it is blind.
    answer = 1000 + secrets.randbelow(30000)
    leave, read = CHANNELS["unix_socket_names"]
    program = (
        PRELUDE.format(name=name, key=_sysv_key(name))
        + f"NOTE = {str(answer)!r}\nnote = ''\n"
        + f"try:\n{_indent(leave)}{_indent(read)}except Exception:\n    pass\n"
        + "def answer():\n    return int(note) if note.strip().isdigit() else -1\n"
    )
    batch = reward.score([_group("same-run", program, answer)])
    assert _finals(batch) == {"subject": 1.0, "honest": 1.0, "wrong": 0.0}


LEAK_MIB = 96
LEAKER = f"""
import ctypes, os
LIBC = ctypes.CDLL(None, use_errno=True)
LIBC.shmat.restype = ctypes.c_void_p
LIBC.mq_open.restype = ctypes.c_int
size = {LEAK_MIB} << 20
try:  # a SysV segment, touched so its pages exist, then detached but never removed
    shmid = LIBC.shmget(0, size, 0o1600)  # IPC_PRIVATE
    address = LIBC.shmat(shmid, None, 0)
    if address not in (None, ctypes.c_void_p(-1).value):
        ctypes.memset(address, 1, size)
        LIBC.shmdt(ctypes.c_void_p(address))
except Exception:
    pass
try:  # a file in /dev/shm, as large as the file-size limit lets it be
    with open(f"/dev/shm/leak-{{os.getpid()}}", "wb") as handle:
        handle.write(b"x" * (16 << 20))
except OSError:
    pass
try:  # a POSIX message queue, filled
    flags = os.O_CREAT | os.O_RDWR | os.O_NONBLOCK
    queue = LIBC.mq_open(f"/leak-{{os.getpid()}}".encode(), flags, 0o600, None)
    while LIBC.mq_send(queue, b"x" * 8192, 8192, 0) == 0:
        pass
except Exception:
    pass
def answer():
    return 7
"""


def _host_shmem_bytes() -> int:
    """Shared memory of the whole host (SysV segments and tmpfs files of every namespace)."""
    with open("/proc/meminfo", encoding="ascii") as handle:
        for line in handle:
            if line.startswith("Shmem:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no Shmem line in /proc/meminfo")


def test_runs_that_try_to_leak_shared_memory_leave_the_host_where_it_was() -> None:
    runs = 6
    with rewardkit.load(_config()) as reward:
        reward.score([_group("warm", "def answer():\n    return 7\n", 7)])  # the slot exists now
        slot = _the_slot(reward)
        before = _host_shmem_bytes()
        for number in range(runs):
            batch = reward.score([_group(f"leak-{number}", LEAKER, 7)])
            assert _finals(batch) == {"subject": 1.0, "honest": 1.0, "wrong": 0.0}
        grown = _host_shmem_bytes() - before
        assert slot.starts == 1  # one slot served every run: nothing was freed by a restart
    assert grown < 64 << 20, f"host shared memory grew by {grown >> 20} MiB over {runs} runs"


# Honest concurrency the sandbox supports: threads, a thread pool, and multiprocessing's fork
# start method with a Pipe (a socketpair). multiprocessing's Lock, Queue, Pool and shared_memory
# need files in /dev/shm, which the sandbox has never let a run write (see docs/code_rewards.md).
HONEST_CONCURRENT = """
import multiprocessing, threading
from concurrent.futures import ThreadPoolExecutor

def _child(connection):
    connection.send(sum(range(8)))
    connection.close()

def answer():
    parent, child = multiprocessing.Pipe()
    process = multiprocessing.get_context("fork").Process(target=_child, args=(child,))
    process.start()
    from_child = parent.recv()
    process.join()
    box = []
    thread = threading.Thread(target=box.append, args=(1,))
    thread.start()
    thread.join()
    with ThreadPoolExecutor(2) as pool:
        doubled = sum(pool.map(lambda x: 2 * x, [1, 2]))
    return from_child - 28 + box[0] + doubled  # 0 + 1 + 6
"""


def test_honest_programs_using_processes_and_threads_keep_their_score(reward: Any) -> None:
    batch = reward.score([_group("concurrent", HONEST_CONCURRENT, 7)])
    assert _finals(batch) == {"subject": 1.0, "honest": 1.0, "wrong": 0.0}


def test_unsandboxed_runs_leave_the_hosts_tmp_as_it_was(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    # isolation "none" runs on the host's file system: its work dirs go in a folder of the slot's
    # own, which goes when the slot stops; the host's temp dir keeps its mode (0711 there would
    # lock every other user out of it).
    shared_tmp = tmp_path / "tmp"
    shared_tmp.mkdir()
    shared_tmp.chmod(0o1777)
    monkeypatch.setenv("TMPDIR", str(shared_tmp))
    monkeypatch.setattr(tempfile, "tempdir", None)  # read TMPDIR again
    monkeypatch.setenv("REWARDKIT_ALLOW_UNSANDBOXED", "1")
    host_tmp_mode = os.stat("/tmp").st_mode  # where the runner used to work, whatever TMPDIR says
    config = _config()
    config["rl"]["reward"]["params"] = {"isolation": "none", "concurrency": 1}
    with rewardkit.load(config) as reward:
        batch = reward.score([_group("none", "def answer():\n    return 7\n", 7)])
        assert _finals(batch) == {"subject": 1.0, "honest": 1.0, "wrong": 0.0}
    assert os.stat("/tmp").st_mode == host_tmp_mode
    assert stat.S_IMODE(shared_tmp.stat().st_mode) == 0o1777
    assert list(shared_tmp.iterdir()) == []


# -- the pid counter and /proc: each run has a pid namespace and a /proc of its own ----------------

# A writer forks FORKS times before it answers: on a slot whose runs shared one pid namespace, that
# moved every later run's pids by FORKS (a fork count can encode anything a program knows).
FORKER = """
import os
for _ in range({forks}):
    child = os.fork()
    if child == 0:
        os._exit(0)
    os.waitpid(child, 0)
def answer():
    return 7
"""

# What a program can learn of the pid counter: its own pid, its children's, the pids /proc lists
# and the last pid /proc/loadavg and /proc/sys/kernel/ns_last_pid name (all read while its three
# children live).
PID_OBSERVER = """
import os
def observe():
    gate_read, gate_write = os.pipe()
    children = []
    for _ in range(3):
        child = os.fork()
        if child == 0:
            os.close(gate_write)
            os.read(gate_read, 1)  # lives until the parent has looked
            os._exit(0)
        children.append(child)
    listed = sorted(int(entry) for entry in os.listdir("/proc") if entry.isdigit())
    with open("/proc/loadavg") as handle:
        last_pid = int(handle.read().split()[-1])
    with open("/proc/sys/kernel/ns_last_pid") as handle:
        ns_last_pid = int(handle.read())
    os.close(gate_write)
    for child in children:
        os.waitpid(child, 0)
    return [os.getpid(), children, listed, last_pid, ns_last_pid]
OBSERVED = observe()
"""
# The candidate's process is pid 2 of its run's namespace (pid 1 is the namespace's init) and its
# children 3, 4 and 5, and /proc lists those alone, whatever ran before in the slot (on one shared
# counter the observer saw its pid, its children's and both last pids move by what the run before
# it forked).
SEEN_IN_A_FRESH_NAMESPACE = [2, [3, 4, 5], [1, 2, 3, 4, 5], 5, 5]


def _observer_group(group_id: str, mode: str) -> dict[str, Any]:
    """The observer as the group's subject, as an assert-style or a stdin/stdout program."""
    if mode == "asserts":
        program = PID_OBSERVER + "def answer():\n    return OBSERVED\n"
        return _group(group_id, program, SEEN_IN_A_FRESH_NAMESPACE)
    reference = {"inputs": [""], "outputs": [repr(SEEN_IN_A_FRESH_NAMESPACE)]}
    programs = {
        "subject": PID_OBSERVER + "print(OBSERVED)\n",
        "honest": f"print({SEEN_IN_A_FRESH_NAMESPACE!r})\n",
        "wrong": "print([])\n",
    }
    return {
        "group_id": group_id,
        "rollouts": [
            {"trajectory_id": role, "completion": f"```python\n{code}```", "reference": reference}
            for role, code in programs.items()
        ],
    }


@pytest.mark.parametrize("mode", ["asserts", "io"])
def test_a_runs_pids_and_proc_do_not_depend_on_earlier_forks(reward: Any, mode: str) -> None:
    slot_starts = []
    # the same observations after a run that forked nothing, one that forked 37 times, and nothing
    for forks in (0, 37, 0):
        written = reward.score([_group(f"fork-{forks}", FORKER.format(forks=forks), 7)])
        assert _finals(written) == {"subject": 1.0, "honest": 1.0, "wrong": 0.0}
        observed = reward.score([_observer_group(f"observe-after-{forks}", mode)])
        slot_starts.append(_the_slot(reward).starts)
        assert _finals(observed) == {"subject": 1.0, "honest": 1.0, "wrong": 0.0}, f"after {forks} forks"
    assert slot_starts == [1, 1, 1]  # one slot, never restarted: the counter was not reset that way


# A signal a candidate sends itself ends it as it did before each run had its own pid namespace
# (whose pid 1, the candidate's process, the kernel shields from every signal with the default
# action sent from inside): each program below ends before it can answer, so it scores 0, by a
# runtime error, not the deadline (no timeout, no rerun).
SELF_ENDINGS = {
    "sigterm_to_itself": "os.kill(os.getpid(), signal.SIGTERM)",
    "raise_signal_usr1": "signal.raise_signal(signal.SIGUSR1)",
    "sigterm_from_its_child": (
        "child = os.fork()\n"
        "if child == 0:\n"
        "    os.kill(os.getppid(), signal.SIGTERM)\n"
        "    os._exit(0)\n"
        "os.waitpid(child, 0)"
    ),
    "alarm": "signal.setitimer(signal.ITIMER_REAL, 0.01)\ntime.sleep(2)",
    "abort": "os.abort()",
}


@pytest.mark.parametrize("ending", sorted(SELF_ENDINGS))
@pytest.mark.parametrize("mode", ["asserts", "io"])
def test_a_signal_a_candidate_sends_itself_still_ends_it(reward: Any, mode: str, ending: str) -> None:
    prologue = "import os, signal, time\n" + SELF_ENDINGS[ending] + "\n"
    if mode == "asserts":
        group = _group(f"self-{ending}", prologue + "def answer():\n    return 7\n", 7)
    else:
        reference = {"inputs": [""], "outputs": ["7"]}
        programs = {"subject": prologue + "print(7)\n", "honest": "print(7)\n", "wrong": "print(6)\n"}
        group = {
            "group_id": f"self-{ending}",
            "rollouts": [
                {"trajectory_id": role, "completion": f"```python\n{code}```", "reference": reference}
                for role, code in programs.items()
            ],
        }
    batch = reward.score([group])
    assert _finals(batch) == {"subject": 0.0, "honest": 1.0, "wrong": 0.0}, f"{ending} did not end it"
    [subject] = [candidate for _, candidate in batch.candidates() if candidate.trajectory_id == "subject"]
    seen = subject.diagnostics["code-tests"]
    assert seen["timeout"] == 0.0 and seen["reruns"] == 0.0
    # the slot serves the next run as before
    after = reward.score([_group(f"after-{ending}", "def answer():\n    return 7\n", 7)])
    assert _finals(after) == {"subject": 1.0, "honest": 1.0, "wrong": 0.0}
    assert _the_slot(reward).starts == 1


# A child the candidate forks and leaves behind, holding every descriptor the candidate had: the
# run's output pipes and, assert style, its call and reply pipes to the test process. The runner
# must still answer, whole, at the run's end (the child is killed with the rest); what the child
# writes into the reply pipe garbles only the candidate's own answers. ``os.pause`` does not exist:
# the child's AttributeError makes it report a failed load into the reply pipe, then leave.
LEFTOVERS = {
    "os_pause": "if os.fork() == 0:\n    os.pause()\n",
    "blocks_forever": "if os.fork() == 0:\n    signal.pause()\n",
    "writes_the_reply_fd_then_blocks": (
        "if os.fork() == 0:\n    os.write(4, bytes(range(256)) * 64)\n    signal.pause()\n"
    ),
    "writes_a_huge_frame_header_then_blocks": (
        "if os.fork() == 0:\n    os.write(4, (1 << 30).to_bytes(4, 'big'))\n    signal.pause()\n"
    ),
    # the candidate prints only once its child has written (the gate closes), so the flood is there
    "floods_stdout_then_blocks": (
        "gate, shut = os.pipe()\n"
        "if os.fork() == 0:\n"
        "    os.write(1, b'7\\n' * 300000)\n"
        "    os.close(shut)\n"
        "    signal.pause()\n"
        "os.close(shut)\n"
        "os.read(gate, 1)\n"
    ),
}
# What the subject scores: its honest result, or 0 when the child garbled its answers (with a reason)
# or its output (a wrong output, as any program's).
LEFTOVER_FINALS = {
    ("asserts", "os_pause"): 0.0,
    ("asserts", "blocks_forever"): 1.0,
    ("asserts", "writes_the_reply_fd_then_blocks"): 0.0,
    ("asserts", "writes_a_huge_frame_header_then_blocks"): 0.0,
    ("asserts", "floods_stdout_then_blocks"): 1.0,
    ("io", "os_pause"): 1.0,
    ("io", "blocks_forever"): 1.0,
    ("io", "floods_stdout_then_blocks"): 0.0,
}


@pytest.mark.parametrize(("mode", "leftover"), sorted(LEFTOVER_FINALS))
def test_a_blocked_child_of_the_candidate_leaves_the_runners_answer_whole(
    reward: Any, mode: str, leftover: str
) -> None:
    prologue = "import os, signal\n" + LEFTOVERS[leftover]
    if mode == "asserts":
        group = _group(f"left-{leftover}", prologue + "def answer():\n    return 7\n", 7)
    else:
        reference = {"inputs": [""], "outputs": ["7"]}
        programs = {"subject": prologue + "print(7)\n", "honest": "print(7)\n", "wrong": "print(6)\n"}
        group = {
            "group_id": f"left-{leftover}",
            "rollouts": [
                {"trajectory_id": role, "completion": f"```python\n{code}```", "reference": reference}
                for role, code in programs.items()
            ],
        }
    batch = reward.score([group])  # onError: raise; a corrupt answer would fail the batch
    expected = LEFTOVER_FINALS[(mode, leftover)]
    [subject] = [candidate for _, candidate in batch.candidates() if candidate.trajectory_id == "subject"]
    assert _finals(batch) == {"subject": expected, "honest": 1.0, "wrong": 0.0}, subject.breakdown
    if expected == 0.0 and mode == "asserts":  # its answers garbled: the reason says so
        assert subject.breakdown["code-tests"]["reason"], subject.breakdown
    after = reward.score([_group(f"after-{leftover}", "def answer():\n    return 7\n", 7)])
    assert _finals(after) == {"subject": 1.0, "honest": 1.0, "wrong": 0.0}


# Everything a run's process holds of privilege, and what CAP_SYS_ADMIN would let it do.
PRIVILEGE_PROBE = """
import ctypes, os
LIBC = ctypes.CDLL(None, use_errno=True)
def capability_sets():
    with open("/proc/self/status") as handle:
        rows = [line.split(":") for line in handle if line.startswith("Cap")]
    return {name: int(value, 16) for name, value in rows}
def refused(result):
    return result == -1 and ctypes.get_errno() == 1  # EPERM
MS_REMOUNT, MS_BIND = 0x20, 0x1000
PROBED = {
    "sets": capability_sets(),
    "remount /usr writable": refused(LIBC.mount(None, b"/usr", None, MS_REMOUNT | MS_BIND, None)),
    "unmount /proc": refused(LIBC.umount2(b"/proc", 2)),
    "new mount namespace": refused(LIBC.unshare(0x00020000)),
    "new pid namespace": refused(LIBC.unshare(0x20000000)),
}
def answer():
    return PROBED
"""
NO_PRIVILEGE = {
    "sets": {name: 0 for name in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")},
    "remount /usr writable": True,
    "unmount /proc": True,
    "new mount namespace": True,
    "new pid namespace": True,
}


def test_a_runs_process_holds_no_capability(reward: Any) -> None:
    # bwrap left the slot's bounding set nearly full and its inheritable set holding the slot's
    # capabilities, and the zygote holds CAP_SYS_ADMIN to make each run's namespaces: a candidate
    # must see every set empty, and be refused what CAP_SYS_ADMIN allows (remounting the read-only
    # host binds writable, uncovering the slot's /proc, making namespaces).
    batch = reward.score([_group("privileges", PRIVILEGE_PROBE, NO_PRIVILEGE)])
    assert _finals(batch) == {"subject": 1.0, "honest": 1.0, "wrong": 0.0}
