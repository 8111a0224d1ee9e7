import js from '@eslint/js';
import stylistic from '@stylistic/eslint-plugin';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'sdk/dist/**', 'node_modules/**', 'coverage/**', 'src/database/migrations/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    // removed code left double blank lines behind more than once; ESLint's own layout rules moved to @stylistic
    plugins: { '@stylistic': stylistic },
    rules: { '@stylistic/no-multiple-empty-lines': ['error', { max: 1, maxBOF: 0, maxEOF: 0 }] },
  },
  {
    files: ['**/*.ts'],
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' }],
      '@typescript-eslint/no-explicit-any': 'error',
      'no-console': 'error',
    },
  },
  {
    // a statement name is the connection's: prepareNamed checks it is free (src/database/prepared-statements.ts)
    files: ['src/**/*.ts'],
    ignores: ['src/database/prepared-statements.ts', 'src/**/*.spec.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        { selector: "CallExpression[callee.property.name='prepare']", message: 'Prepare a named statement with prepareNamed(db, name, query): it checks the name is free.' },
        // a library's metadata keys are its private fields: they change without notice
        { selector: 'Literal[value=/^swagger\\//]', message: "@nestjs/swagger's metadata keys are private: use its decorators (ApiQuery({ type }) spreads a query class) or a declaration of our own." },
      ],
    },
  },
  {
    files: ['test/**/*.ts', 'src/cli/**/*.ts', 'scripts/**/*.ts', 'bench/**/*.ts'],
    rules: { 'no-console': 'off', '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    files: ['**/*.js', '**/*.cjs'],
    languageOptions: { sourceType: 'commonjs', globals: { require: 'readonly', module: 'writable', __filename: 'readonly', __dirname: 'readonly', process: 'readonly', console: 'readonly' } },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);
