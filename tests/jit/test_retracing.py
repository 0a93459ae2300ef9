"""Retracing: a program the cache drops takes its nodes and plans with it, so memory stays flat."""
import gc
import logging
import tracemalloc
import weakref

import numpy as np

import tinyflow as tfl

BACKEND_INDEPENDENT = True  # what is measured is the graph and the caches, not the kernels


def sign_flip(x):
    if tfl.reduce_sum(x) > 0:
        y = x * 2.0
    else:
        y = -x
    return y


def test_retracing_hundreds_of_times_keeps_memory_and_the_graph_flat(caplog):
    f = tfl.jit.to_static(sign_flip)
    graph = tfl.get_default_graph()
    caplog.set_level(logging.ERROR, logger="tinyflow.jit")
    f(np.ones(1, np.float32))
    first = weakref.ref(f.concrete_programs[0].outputs[0])
    tracemalloc.start()
    try:
        for size in range(2, 260):  # a new shape each time: a retrace; every other call also builds a backward graph
            x = tfl.tensor(np.full(size, 0.5, np.float32), requires_grad=size % 2 == 0)
            y = f(x)
            if x.requires_grad:
                tfl.reduce_sum(y).backward()
            if size == 60:
                gc.collect()
                settled, nodes = tracemalloc.get_traced_memory()[0], len(graph.nodes)
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - settled
    finally:
        tracemalloc.stop()
    assert first() is None  # the first program's nodes are gone
    assert len(f.concrete_programs) == f.max_programs and len(graph.nodes) <= nodes
    assert grown < 64 * 1024, f"{grown} bytes more after 200 more retraces"
