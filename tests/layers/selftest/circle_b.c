/* The other half: calling circle_a back closes the circle. */
int circle_a(int n);
int circle_b(int n);

int circle_b(int n)
{
	return n > 0 ? circle_a(n - 1) : 1;
}
