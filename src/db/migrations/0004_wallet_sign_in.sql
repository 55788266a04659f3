-- Wallet sign-in (issue 9): customers.wallet_address, the SIWE nonces (hashed, single-use) and product enrollment.
CREATE TABLE "customer_products" (
	"customer_id" uuid NOT NULL,
	"product" text NOT NULL,
	"enabled_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "customer_products_customer_id_product_pk" PRIMARY KEY("customer_id","product")
);
--> statement-breakpoint
CREATE TABLE "wallet_nonces" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"nonce_hash" text NOT NULL,
	"wallet_address" text NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"used_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "wallet_nonces_nonce_hash_unique" UNIQUE("nonce_hash")
);
--> statement-breakpoint
ALTER TABLE "customers" ADD COLUMN "wallet_address" text;--> statement-breakpoint
ALTER TABLE "customer_products" ADD CONSTRAINT "customer_products_customer_id_customers_id_fk" FOREIGN KEY ("customer_id") REFERENCES "public"."customers"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "wallet_nonces_expires_idx" ON "wallet_nonces" USING btree ("expires_at");--> statement-breakpoint
ALTER TABLE "customers" ADD CONSTRAINT "customers_wallet_address_unique" UNIQUE("wallet_address");--> statement-breakpoint
ALTER TABLE "customers" ADD CONSTRAINT "customers_wallet_address_lower_hex" CHECK ("customers"."wallet_address" ~ '^0x[0-9a-f]{40}$');