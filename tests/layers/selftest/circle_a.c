/* One half of a circle: circle_a calls into circle_b, which calls back. */
int circle_a(int n);
int circle_b(int n);

int circle_a(int n)
{
	return n > 0 ? circle_b(n - 1) : 0;
}
