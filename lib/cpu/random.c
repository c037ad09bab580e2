/* The global random generator behind randn, rand and dropout
 * (amp_manual_seed): splitmix64, one process-wide stream under a mutex so
 * seeded programs are reproducible whatever thread draws. */
#include "cpu_ops.h"

#include <math.h>
#include <pthread.h>

/* PyTorch's default CPU seed, so unseeded programs start somewhere fixed. */
#define CPU_DEFAULT_SEED UINT64_C(67280421310721)

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t state = CPU_DEFAULT_SEED;

static uint64_t next_bits(void)
{
	uint64_t z = (state += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

/* 53 random bits scaled into [0, 1). */
static double next_uniform(void)
{
	return (double)(next_bits() >> 11) * 0x1.0p-53;
}

void cpu_random_seed(uint64_t seed)
{
	pthread_mutex_lock(&lock);
	state = seed;
	pthread_mutex_unlock(&lock);
}

void cpu_random_uniform(double *out, size_t n)
{
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < n; i++)
		out[i] = next_uniform();
	pthread_mutex_unlock(&lock);
}

/* Box-Muller: each pair of uniforms gives two independent normals. */
void cpu_random_normal(double *out, size_t n)
{
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < n; i += 2) {
		double u1 = 1.0 - next_uniform(); /* (0, 1]: log is finite */
		double u2 = next_uniform();
		double radius = sqrt(-2.0 * log(u1));
		double angle = 2.0 * M_PI * u2;
		out[i] = radius * cos(angle);
		if (i + 1 < n)
			out[i + 1] = radius * sin(angle);
	}
	pthread_mutex_unlock(&lock);
}
