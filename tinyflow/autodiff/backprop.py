"""The backward walk: one pending-count traversal for every mode (graph, eager, to_static, loop and cond gradients).

A node is processed only after *every* consumer on a path to the roots has delivered its gradient (Kahn's algorithm);
a plain breadth-first search would process `x` in `loss = x*a*b + x` as soon as the `+` delivered, before the product
did. `pending[n]` counts the consumers n still waits for; a ready node sums what it received, gets one gradient per
parent from its gradient function and hands each parent its contribution. What differs between modes is a `walk`:

    parents(node, g)     -> (parents, gradients), one per input (parent None: off the path; gradient None: none, all
                            None when g is None), each fit to the input's shape; None for a node with no parents
    add(node, contribs)  -> the sum of several contributions (graph mode: one AddN node), None for none
    deliver(node, g)     -> a leaf's complete gradient (graph mode keeps it for xs; eager accumulates it into `.grad`)
    recount(waiting)     -> exact counts when the walk runs dry while nodes still wait (eager: a consumer that
                            never leads to the roots)

`trace(step)` (tfl.viz.backprop_steps and the explorer draw it) sees each processed node as a dict: `node`, its summed
`grad`, the contributions it `received`, what it `delivered` ((parent, gradient) per input on the path), the parents it
`released`; and, live (copy what you keep), `pending`, the waiting nodes' `contributions` and the `queue`.
"""
from collections import deque


def backprop(seeds, pending, walk, trace=None):
    """Walk back from `seeds` ({root: gradient}); `pending` ({node: consumers it still waits for}) holds every node
    in graph mode and starts empty in eager mode, where a node not in it waits for `node.uses` (its recorded count)."""
    parents_of, add, deliver = walk.parents, walk.add, walk.deliver
    contributions = {root: [grad] for root, grad in seeds.items()}
    for root in seeds:  # a root may also feed another root (y and y * 2): it waits for that one
        if root not in pending:
            pending[root] = root.uses
    # breadth-first: first ready, first out. Nodes nobody waits on start ready, gradient or not: those off the
    # roots' paths still count their parents down
    ready = deque(node for node, left in pending.items() if left == 0)
    # a node released while nothing else was ready is next anyway: with its one contribution (following_grad) it
    # skips the queue and the dict of contributions, so a chain never touches them
    following = following_grad = None
    while True:
        if following is not None:
            node = following
            grad = following_grad
            following = received = None
        elif ready:
            node = ready.popleft()
            received = contributions.pop(node, ())
            grad = received[0] if len(received) == 1 else add(node, received)
        elif contributions:  # every node left waits for a consumer that will never deliver: count exactly
            pending = walk.recount(list(contributions))
            ready = deque(node for node in contributions if pending.get(node, 0) == 0)
            if not ready:
                break
            continue
        else:
            break
        step = parents_of(node, grad)
        if step is None:  # a leaf (or a node gradients stop at): its gradient is complete
            pending.pop(node, None)  # eager leaves take each contribution as it comes (a count of 1, again)
            deliver(node, grad)
            parents = grads = ()
        else:
            parents, grads = step
        for index, parent in enumerate(parents):
            if parent is None:
                continue
            g = grads[index]
            known = pending.get(parent)
            if known is None:  # an eager op reached first: its count is a guess
                left = parent.uses - 1
                if left:  # (an eager op released by its first contribution is never stored)
                    pending[parent] = left
            else:
                left = pending[parent] = known - 1
            if not left and following is None and not ready and parent not in contributions:
                following = parent
                following_grad = g
                continue
            waiting = contributions.get(parent)
            if waiting is None:
                contributions[parent] = [] if g is None else [g]
            elif g is not None:
                waiting.append(g)
            if not left:
                ready.append(parent)
        if trace is not None:  # live structures: a copy per step would make tracing quadratic
            delivered = [(p, g) for p, g in zip(parents, grads) if p is not None]
            trace(dict(node=node, grad=grad, received=[grad] if received is None else list(received),
                       delivered=delivered, released=list(dict.fromkeys(p for p, _ in delivered if pending.get(p) == 0)),
                       pending=pending, contributions=contributions,
                       queue=([] if following is None else [following]) + list(ready)))
