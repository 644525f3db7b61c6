/*
 * The upper file of a line: line_a calls into line_b and nothing calls
 * back. Its helper is static, so line_b's reference to a global of the
 * same name (defined in some other object, or nowhere) is no edge back.
 */
int line_a(int n);
int line_b(int n);

static int helper(int n)
{
	return n * 2;
}

int line_a(int n)
{
	return line_b(helper(n));
}
