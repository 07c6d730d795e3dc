/* Monotonic clock, and the backoff of wait loops. */
#include "build_config.h"

#include <sched.h>
#include <time.h>

#include "accel/timer.h"

double accel_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void accel_wait_backoff(long spins)
{
    if (spins < 200) return;
    if (spins < 2000) { sched_yield(); return; }
    struct timespec ts = { 0, 50 * 1000 };
    nanosleep(&ts, NULL);
}
