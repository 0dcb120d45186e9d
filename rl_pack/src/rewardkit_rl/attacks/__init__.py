"""Attack programs: candidates that try to win a reward without solving the task.

Each one is a fixed, task-independent program; the security audit and the tests reuse them to
show that a reward cannot be won that way (``answer_key``: read the tests out of the candidate's
own process and answer every call from them).
"""
