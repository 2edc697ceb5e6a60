// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Two MPI ranks: rank 0 sends each size from 1 B to 1 MiB, rank 1 checks every byte and sends
 * it back, rank 0 checks the echo.  Prints "mpi_pingpong: ok" from rank 0 when all matched.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define MAX_LEN (1 << 20)
#define ROUNDS 20

static unsigned char pattern(size_t i, int size_log, int round)
{
	return (unsigned char)(i * 7 + size_log * 13 + round);
}

static long first_bad(const unsigned char *b, size_t len, int size_log, int round)
{
	for (size_t i = 0; i < len; i++)
		if (b[i] != pattern(i, size_log, round))
			return (long)i;
	return -1;
}

int main(int argc, char **argv)
{
	unsigned char *buf;
	int rank, nranks, bad = 0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	buf = malloc(MAX_LEN);
	if (nranks != 2 || !buf) {
		fprintf(stderr, "mpi_pingpong: needs 2 ranks and %d bytes\n", MAX_LEN);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	for (int lg = 0; (1 << lg) <= MAX_LEN; lg++) {
		size_t len = (size_t)1 << lg;

		for (int r = 0; r < ROUNDS; r++) {
			long at;

			if (rank == 0) {
				for (size_t i = 0; i < len; i++)
					buf[i] = pattern(i, lg, r);
				MPI_Send(buf, (int)len, MPI_BYTE, 1, lg, MPI_COMM_WORLD);
			}
			for (size_t i = 0; i < len; i++)
				buf[i] = 0;
			MPI_Recv(buf, (int)len, MPI_BYTE, !rank, lg, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
			at = first_bad(buf, len, lg, r);
			if (at >= 0) {
				fprintf(stderr, "mpi_pingpong: rank %d, %zu bytes, round %d: byte %ld differs\n",
					rank, len, r, at);
				bad = 1;
			}
			if (rank == 1)
				MPI_Send(buf, (int)len, MPI_BYTE, 0, lg, MPI_COMM_WORLD);
		}
	}
	MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	if (rank == 0)
		printf("mpi_pingpong: %s (1 B to %d B, %d rounds each)\n", bad ? "FAILED" : "ok",
		       MAX_LEN, ROUNDS);
	free(buf);
	MPI_Finalize();
	return bad;
}
