"""An event loop that ends while the async pool replaces a broken connection in the background.

The pool is opened full so that it never grows in a task of its own, but psycopg_pool replaces
a connection its check finds broken (a server restart, an idle timeout, ``max_lifetime``) in a
worker task, and that task takes the cancellation ``asyncio.run`` sends as it ends for a failed
connect, and waits for its next job: ``asyncio.run`` waited for it forever. A proxy that
accepts and never answers holds the replacement's connect open while the loop ends.
"""

from __future__ import annotations

import subprocess
import sys

from stores_util import postgres_dsn

_SCRIPT = r'''
import asyncio, socket, sys, threading
import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from session_graph.stores import PostgresStore

upstream = conninfo_to_dict(sys.argv[1])
hold = threading.Event()
held: list[socket.socket] = []

def pump(src, dst):
    try:
        while data := src.recv(65536):
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try: s.shutdown(socket.SHUT_RDWR)
            except OSError: pass

def serve(listener):
    while True:
        client, _ = listener.accept()
        if hold.is_set():  # a server that accepts and never answers: the connect waits
            held.append(client)
            continue
        server = socket.create_connection((upstream.get("host", "127.0.0.1"), int(upstream.get("port", 5432))))
        threading.Thread(target=pump, args=(client, server), daemon=True).start()
        threading.Thread(target=pump, args=(server, client), daemon=True).start()

listener = socket.create_server(("127.0.0.1", 0))
threading.Thread(target=serve, args=(listener,), daemon=True).start()
dsn = make_conninfo(sys.argv[1], host="127.0.0.1", port=listener.getsockname()[1], application_name="sg-hang-broken")
store = PostgresStore(dsn, connect_timeout=30)

async def main():
    await asyncio.gather(store.alist("t-hang"), store.alist("t-hang"))  # two connections at least
    pool = store._apool
    pid = pool._pool[0].info.backend_pid  # the connection the next call takes
    with psycopg.connect(sys.argv[1], autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        while admin.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone()[0]:
            pass
    hold.set()  # its replacement's connect waits
    await store.alist("t-hang")  # the broken one found by the check, replaced in the background
    print("main returned", flush=True)

asyncio.run(main())  # ends while the replacement connects
store.close()
print("done")
'''


def test_a_loop_that_ends_while_a_broken_connection_is_replaced_does_not_hang() -> None:
    try:
        done = subprocess.run([sys.executable, "-c", _SCRIPT, postgres_dsn()], capture_output=True, text=True, timeout=60,
                              check=False)
    except subprocess.TimeoutExpired as hung:
        raise AssertionError(f"asyncio.run never ended: {(hung.stdout or b'')!r}") from None
    assert done.returncode == 0 and done.stdout.split()[-1:] == ["done"], done.stderr[-2000:]
