# Correct code that sleeps at import, just under the per-test limit (5 s in this suite):
# every test imports the file afresh, so without a budget per part the tests of this part
# held the grade for tests x limit and still scored full marks.
import time as _time

_time.sleep(3.5)
