"""macsql.core: the bottom layer every other one reads.

The run-time settings (`context`), the typed graph state (`state`) and its records
(`records`), custom stream events (`events`), the state updates of a failed agent turn
(`failures`), and the reusable worker threads that deadlines wait on (`worker_threads`). It
imports no other macsql layer.
"""
