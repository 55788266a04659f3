import { and, asc, eq } from 'drizzle-orm';
import type { DbOrTx } from '../../db/client.js';
import { customerProducts } from '../../db/schema/index.js';

export type CustomerProductRow = typeof customerProducts.$inferSelect;

export function createProductsRepo() {
  return {
    /** Enrolls once: a repeat finds the first row and reports that nothing was inserted. */
    async enable(tx: DbOrTx, customerId: string, product: string): Promise<{ row: CustomerProductRow; created: boolean }> {
      const [inserted] = await tx.insert(customerProducts).values({ customerId, product }).onConflictDoNothing().returning();
      if (inserted) return { row: inserted, created: true };
      const [row] = await tx
        .select()
        .from(customerProducts)
        .where(and(eq(customerProducts.customerId, customerId), eq(customerProducts.product, product)));
      return { row, created: false };
    },

    async list(tx: DbOrTx, customerId: string): Promise<CustomerProductRow[]> {
      return tx.select().from(customerProducts).where(eq(customerProducts.customerId, customerId)).orderBy(asc(customerProducts.enabledAt), asc(customerProducts.product));
    },
  };
}

export type ProductsRepo = ReturnType<typeof createProductsRepo>;
