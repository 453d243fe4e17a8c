"""A WebSocket echo: text comes back prefixed, bytes as they are."""

import os

import levers9

app = levers9.App("e2e-realtime")
SMALL = dict(image=os.environ.get("E2E_IMAGE") or None, cpu=float(os.environ.get("E2E_CPU") or 0.1), memory=256)


@app.realtime(**SMALL)
async def echo_ws(ws):
    try:
        while True:
            msg = await ws.receive()
            await ws.send(msg if isinstance(msg, bytes) else "echo: " + msg)
    except levers9.WebSocketDisconnect:
        pass
