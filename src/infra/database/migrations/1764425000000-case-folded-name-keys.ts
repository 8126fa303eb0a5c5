import { MigrationInterface, QueryRunner } from 'typeorm';
import { UnicodeNames1764000000000 } from './1764000000000-unicode-names.js';

/**
 * Name keys now join every case form of a letter (nameKeyOf: `ΟΔΟΣ` and `οδος`, `İZMİR` and `İzmir`, `ILIK` and `ılık`),
 * where they were each character's lower case alone. Every key is rewritten by the rules of UnicodeNames1764000000000:
 * two active siblings that now share a key keep both, the one whose key changed taking the numbered suffix (oldest first).
 */
export class CaseFoldedNameKeys1764425000000 implements MigrationInterface {
  name = 'CaseFoldedNameKeys1764425000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await new UnicodeNames1764000000000().up(queryRunner);
  }

  async down(): Promise<void> {
    // The new keys are as unique as the old ones; a name numbered here keeps its number.
  }
}
