import { Migration } from '@mikro-orm/migrations';

export class Migration20261121225701_drop_chunk_text_trigram extends Migration {

  override name = 'Migration20261121225701_drop_chunk_text_trigram';

  override up(): void | Promise<void> {
    this.addSql(`drop index if exists "document_chunks_text_trgm";`);
  }

  override down(): void | Promise<void> {
    this.addSql(`create index "document_chunks_text_trgm" on "document_chunks" using gin ("text" gin_trgm_ops);`);
  }

}
