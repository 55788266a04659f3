CREATE TABLE "bulk_send_rows" (
	"bulk_send_id" uuid NOT NULL,
	"index" integer NOT NULL,
	"status" text NOT NULL,
	"input" jsonb,
	"envelope_id" uuid,
	"error_code" text,
	"error_message" text,
	"claimed_by" text,
	"claimed_until" timestamp with time zone,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "bulk_send_rows_bulk_send_id_index_pk" PRIMARY KEY("bulk_send_id","index")
);
--> statement-breakpoint
CREATE TABLE "bulk_sends" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"customer_id" uuid NOT NULL,
	"mode" text NOT NULL,
	"template_id" uuid NOT NULL,
	"status" text NOT NULL,
	"caller" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"ended_at" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "bulk_send_rows" ADD CONSTRAINT "bulk_send_rows_bulk_send_id_bulk_sends_id_fk" FOREIGN KEY ("bulk_send_id") REFERENCES "public"."bulk_sends"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "bulk_sends" ADD CONSTRAINT "bulk_sends_customer_id_customers_id_fk" FOREIGN KEY ("customer_id") REFERENCES "public"."customers"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "bulk_send_rows_status_idx" ON "bulk_send_rows" USING btree ("bulk_send_id","status");--> statement-breakpoint
CREATE INDEX "bulk_sends_customer_created_idx" ON "bulk_sends" USING btree ("customer_id","mode","created_at");