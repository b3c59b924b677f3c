#!/usr/bin/env python3
"""Records the request frames real Kafka clients send, for the codec tests in
protocol/tests/captured/. It listens on LISTEN, forwards every connection to
a running Queen node at TARGET, and writes each client frame (size prefix
included) once per (API, version) as <label>-<api key>-v<version>.bin.

    scripts/capture-kafka-requests.py 127.0.0.1:19093 127.0.0.1:9092 kcat protocol/tests/captured
    kcat -b 127.0.0.1:19093 -L    # ...and whatever else should be captured

Metadata answers name the node's advertised address, so run the node with
QUEEN_KAFKA_ADVERTISED=<LISTEN> to keep the client talking through the proxy.
"""

import asyncio
import os
import struct
import sys


async def pump_requests(reader, writer, label, out_dir, seen):
    while True:
        head = await reader.readexactly(4)
        (size,) = struct.unpack(">i", head)
        body = await reader.readexactly(size)
        api_key, version = struct.unpack(">hh", body[:4])
        name = f"{label}-{api_key}-v{version}.bin"
        if name not in seen:
            seen.add(name)
            with open(os.path.join(out_dir, name), "wb") as f:
                f.write(head + body)
        writer.write(head + body)
        await writer.drain()


async def pump(reader, writer):
    while data := await reader.read(65536):
        writer.write(data)
        await writer.drain()


async def main(listen, target, label, out_dir):
    seen = set(os.listdir(out_dir))
    thost, tport = target.rsplit(":", 1)

    async def handle(client_reader, client_writer):
        node_reader, node_writer = await asyncio.open_connection(thost, int(tport))
        try:
            await asyncio.gather(pump_requests(client_reader, node_writer, label, out_dir, seen), pump(node_reader, client_writer))
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            client_writer.close()
            node_writer.close()

    host, port = listen.rsplit(":", 1)
    server = await asyncio.start_server(handle, host, int(port))
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
