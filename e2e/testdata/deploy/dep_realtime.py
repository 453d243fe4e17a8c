"""WebSocket echoes: text comes back prefixed with the deployment's name,
bytes as they are. Two deployments, so that two containers serve
WebSockets side by side on one node."""

import os

import levers9

app = levers9.App("e2e-realtime")
SMALL = dict(image=os.environ.get("E2E_IMAGE") or None, cpu=float(os.environ.get("E2E_CPU") or 0.1), memory=256)


async def _echo(name, ws):
    try:
        while True:
            msg = await ws.receive()
            await ws.send(msg if isinstance(msg, bytes) else "%s: %s" % (name, msg))
    except levers9.WebSocketDisconnect:
        pass


@app.realtime(**SMALL)
async def echo_ws(ws):
    await _echo("echo_ws", ws)


@app.realtime(**SMALL)
async def echo_ws2(ws):
    await _echo("echo_ws2", ws)
