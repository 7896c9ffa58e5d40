#!/usr/bin/python3
"""One bulk TCP stream: what payload rate a link really gives TCP.

  tcp_goodput.py receive HOST PORT   accepts one connection, reads to its
      end and prints the payload rate in bytes per second
  tcp_goodput.py send HOST PORT MB   connects (retrying for 10 s) and sends
      MB megabytes

The rate is timed from the first byte received to the last, so connection
set-up and slow start's first round trips hardly count.
"""
import socket
import sys
import time


def receive(host, port):
    with socket.create_server((host, port)) as server:
        server.settimeout(30)
        conn, _ = server.accept()
        conn.settimeout(30)
        buf = bytearray(1 << 20)
        total, first = 0, None
        while True:
            n = conn.recv_into(buf)
            if n == 0:
                break
            if first is None:
                first = time.monotonic()
            total += n
        if first is None:
            sys.exit("tcp_goodput: the sender sent nothing")
        print(int(total / (time.monotonic() - first)))


def send(host, port, megabytes):
    deadline = time.monotonic() + 10
    while True:
        try:
            conn = socket.create_connection((host, port), timeout=30)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    block = bytes(1 << 20)
    with conn:
        for _ in range(megabytes):
            conn.sendall(block)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "receive":
        receive(sys.argv[2], int(sys.argv[3]))
    elif len(sys.argv) == 5 and sys.argv[1] == "send":
        send(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        sys.exit(__doc__)
