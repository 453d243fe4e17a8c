"""Functions the runner's unit tests run (tests/test_functions_unit.py)."""

import time

import levers9

app = levers9.App("unit")


@app.function(concurrency=2)
def add(a, b=0):
    return a + b


@app.function()
def boom(message):
    raise ValueError(message)


class Stubborn(Exception):
    """Pickles, but does not unpickle (its __init__ wants two arguments)."""

    def __init__(self, a, b):
        super().__init__("%s/%s" % (a, b))


@app.function()
def stubborn():
    raise Stubborn(1, 2)


@app.function()
def big(n):
    return b"x" * n


@app.function()
def slow(seconds):
    time.sleep(seconds)
    return seconds


class Holder:
    @staticmethod
    def nested(x):
        return x * 2
