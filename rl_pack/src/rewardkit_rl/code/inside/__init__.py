"""The code that runs inside the sandbox (standard library only, loaded there as top-level modules).

Only ``rk_procs`` is also imported on the host (``rewardkit_rl.code.inside.rk_procs``), so the host,
the runner and the tests share one meaning of "a process is alive".
"""
