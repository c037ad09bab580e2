/* Build-only check: the public header compiles on its own, pedantically. */
#include "amp.h"

int main(void)
{
	return amp_dtype_size(AMP_DTYPE_F32) == 4 ? 0 : 1;
}
